#!/usr/bin/env python3
"""make_config_corpus.py: seeds for the config and config.json fuzz targets.

  tests/fuzz/make_config_corpus.py            # writes tests/fuzz/corpus/{config,ckconfig}/seed-*

config: every bench.cfg in the tree (configs/**/*.cfg, tests/config/cases/*.cfg,
tests/e2e/*.cfg) as it is, plus a few that exercise what those do not: the
"%%" override section fuzz_config.c understands (--set and --reporter lines),
@include of the fuzz target's part.cfg, and libconfig's less common forms
(64-bit and hex integers, lists of groups, escapes).

ckconfig: every tests/opt/golden/*/config.json, plus hand-written variants
(keys missing, wrong types, out of range, null, not OPT, not an object).
Files the fuzzer found (regress-*, or merged ones) are left alone.
"""
import glob
import json
import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "fuzz", "corpus")

MINI = ('backend = "opt"; precisions = ["fp32"];\n'
        'matrix = { batch_sizes = [1]; samples_per_prompt = [1]; response_lengths = [4]; };\n')

CONFIG_EXTRA = {
    "set-iterations": MINI + "%%\nrun.iterations=3\n",
    "set-list": MINI + "%%\nmatrix.batch_sizes=[1, 2, 4]\nsampling.top_p=0.5\n",
    "set-reporter": MINI + "%%\n+json,csv\nreporters.[0].settings.path=\"x.json\"\n",
    "set-only": "%%\nbackend=\"opt\"\nprecisions=[\"bf16\"]\n",
    "include": MINI + '@include "part.cfg"\n',
    "int64": MINI + "run = { iterations = 4294967297L; warmup = 0x10; };\n",
    "neg64": MINI.replace("[1]; samples", "[-4294967295]; samples"),
    "groups": MINI + 'reporters = ( { name = "json"; settings = { path = "a\\tb\\x41.json"; }; }, "console" );\n',
    "adaptive": MINI + "run = { min_iterations = 3; max_iterations = 9; target_rel_ci = 0.05; "
                       "max_seconds_per_case = 1.5e1; };\n",
    "sampling": MINI + "sampling = { temperature = 0.7; top_p = 0.9; top_k = 40; seed = 7; };\n",
    "plugin-path": MINI + 'plugin_path = [ "/nonexistent", "build/plugins" ];\n',
    "nul-in-string": MINI.replace('"opt"', '"op\0t"'),
}


def write(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def main():
    out = os.path.join(OUT, "config")
    pats = ["configs/**/*.cfg", "tests/config/cases/*.cfg", "tests/e2e/*.cfg"]
    for pat in pats:
        for p in sorted(glob.glob(os.path.join(ROOT, pat), recursive=True)):
            rel = os.path.relpath(p, ROOT).replace("/", "_")
            with open(p, "rb") as f:
                write(out, "seed-" + rel, f.read())
    for name, text in CONFIG_EXTRA.items():
        write(out, "seed-extra-" + name, text)

    out = os.path.join(OUT, "ckconfig")
    base = None
    for p in sorted(glob.glob(os.path.join(ROOT, "tests/opt/golden/*/config.json"))):
        with open(p, "rb") as f:
            data = f.read()
        write(out, "seed-golden-" + os.path.basename(os.path.dirname(p)), data)
        if base is None:
            base = json.loads(data)

    def variant(name, **changes):
        d = dict(base)
        for k, v in changes.items():
            if v is ...:
                d.pop(k, None)
            else:
                d[k] = v
        write(out, "seed-" + name, json.dumps(d, indent=1))

    variant("no-vocab", vocab_size=...)
    variant("vocab-string", vocab_size="1000")
    variant("vocab-float", vocab_size=1000.0)
    variant("vocab-huge", vocab_size=1 << 40)
    variant("dims-max", hidden_size=1 << 20, num_hidden_layers=1 << 20, ffn_dim=1 << 20,
            num_attention_heads=1, vocab_size=1 << 20, max_position_embeddings=1 << 20)
    variant("issue-wrap", hidden_size=1048576, num_hidden_layers=1047222, vocab_size=4,
            max_position_embeddings=1, num_attention_heads=1)
    variant("heads-odd", num_attention_heads=3)
    variant("proj", word_embed_proj_dim=32)
    variant("postln", do_layer_norm_before=False, _remove_final_layer_norm=True)
    variant("nulls", word_embed_proj_dim=None, pad_token_id=None, do_layer_norm_before=None)
    variant("not-opt", model_type="gpt2")
    variant("gelu", activation_function="gelu")
    variant("no-bias", enable_bias=False)
    variant("eos-big", eos_token_id=1000)
    variant("negative", pad_token_id=-1)
    write(out, "seed-array", "[1, 2, 3]")
    write(out, "seed-dup", '{"vocab_size": 4, "vocab_size": 5}')
    write(out, "seed-empty", "")


if __name__ == "__main__":
    main()
