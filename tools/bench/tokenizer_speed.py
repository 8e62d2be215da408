#!/usr/bin/env python3
"""tokenizer_speed.py: benchctl's BPE tokenizer (tokenizer/, timed by
build/tools/bench/bench_tokenizer) side by side with Hugging Face tokenizers
on the same prompt set and the same tokenizer (docs/performance.md).

Nothing is downloaded: a GPT-2-sized byte-level BPE (32000 tokens) is
trained with tokenizers on text already on the machine (this Python's
standard library sources and the Debian licence texts), and the prompt set
is 20000 paragraphs of the same text, ragged, one a line. Both sides must
give the same ids (an FNV-1a hash of every id is compared).

Rounds alternate the sides (C, HF one thread, HF all threads), so a load
that changes during the run touches both; each side's time is the best of
its repeats. The ratio is HF's time over ours (> 1: ours is faster).

  tools/golden/.venv/bin/python tools/bench/tokenizer_speed.py [--rounds 3] [--out /tmp/tokspeed]
"""
import argparse
import glob
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FNV_OFFSET, FNV_PRIME = 1469598103934665603, 1099511628211

HF_CHILD = r"""
import json, sys, time
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
prompts = open(sys.argv[2], encoding="utf-8").read().split("\n")
if prompts and prompts[-1] == "":
    prompts.pop()
best = None
for _ in range(int(sys.argv[3])):
    a = time.perf_counter()
    enc = tok.encode_batch(prompts, add_special_tokens=False)
    t = time.perf_counter() - a
    best = t if best is None or t < best else best
h = %d
for e in enc:
    for i in e.ids:
        h = ((h ^ i) * %d) & 0xFFFFFFFFFFFFFFFF
print(json.dumps({"best_s": best, "tokens": sum(len(e.ids) for e in enc), "ids_fnv": "%%016x" %% h}))
""" % (FNV_OFFSET, FNV_PRIME)


def corpus_files():
    files = sorted(glob.glob(os.path.join(os.path.dirname(os.__file__), "*.py")))
    files += sorted(glob.glob("/usr/share/common-licenses/*"))
    return [f for f in files if os.path.isfile(f)]


def read_text(files):
    out = []
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            out.append(fh.read())
    return "\n".join(out)


def train(text_path, out_dir):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=32000, min_frequency=2, special_tokens=["<s>", "<pad>", "</s>", "<unk>"],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train([text_path], trainer)
    os.makedirs(out_dir, exist_ok=True)
    tok.save(os.path.join(out_dir, "tokenizer.json"))
    return tok


def prompts_from(text, n):
    paras = [" ".join(p.split("\n")).strip() for p in text.split("\n\n")]
    paras = [p for p in paras if len(p) >= 20]
    return [p[:4000] for p in paras[:n]]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default="/tmp/tokspeed")
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "tools", "bench", "bench_tokenizer"))
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    text = read_text(corpus_files())
    corpus = os.path.join(a.out, "corpus.txt")
    with open(corpus, "w", encoding="utf-8") as f:
        f.write(text)
    tok_dir = os.path.join(a.out, "tok")
    t0 = time.perf_counter()
    train(corpus, tok_dir)
    print(f"trained 32000-token BPE on {len(text) / 1e6:.1f} MB in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    prompts = prompts_from(text, 20000)
    pfile = os.path.join(a.out, "prompts.txt")
    with open(pfile, "w", encoding="utf-8") as f:
        f.write("\n".join(prompts) + "\n")
    child = os.path.join(a.out, "hf_child.py")
    with open(child, "w") as f:
        f.write(HF_CHILD)
    tj = os.path.join(tok_dir, "tokenizer.json")
    rows = []
    for r in range(a.rounds):
        c = json.loads(subprocess.check_output([a.bench, tok_dir, pfile, str(a.repeats)]))
        env1 = dict(os.environ, RAYON_NUM_THREADS="1", TOKENIZERS_PARALLELISM="false")
        h1 = json.loads(subprocess.check_output([sys.executable, child, tj, pfile, str(a.repeats)], env=env1))
        envn = dict(os.environ, TOKENIZERS_PARALLELISM="true")
        envn.pop("RAYON_NUM_THREADS", None)
        hn = json.loads(subprocess.check_output([sys.executable, child, tj, pfile, str(a.repeats)], env=envn))
        for h in (h1, hn):
            if h["ids_fnv"] != c["ids_fnv"] or h["tokens"] != c["tokens"]:
                sys.exit(f"ids differ: benchctl {c['tokens']} tokens {c['ids_fnv']}, tokenizers {h['tokens']} {h['ids_fnv']}")
        rows.append((c["best_s"], h1["best_s"], hn["best_s"]))
        print(f"round {r + 1}: benchctl {c['best_s'] * 1e3:.1f} ms, tokenizers 1 thread {h1['best_s'] * 1e3:.1f} ms "
              f"(x{h1['best_s'] / c['best_s']:.2f}), all threads {hn['best_s'] * 1e3:.1f} ms "
              f"(x{hn['best_s'] / c['best_s']:.2f})")
    print(f"prompts {c['prompts']}, {c['bytes'] / 1e6:.2f} MB, {c['tokens']} tokens, ids identical "
          f"(fnv {c['ids_fnv']}); tokenizers {__import__('tokenizers').__version__}; cpus {os.cpu_count()}; "
          f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
