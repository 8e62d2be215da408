"""models.py: what the adapters share about the model (standard library only):
the families the workers run, the built-in shapes (OPT and the Llama family),
the model settings, the model's shape read from its config.json (or a built-in
shape's) with one line for a family a worker cannot run, checkpoint checks,
the process's peak RSS, and a synthetic vocabulary for engines that want token
strings.

Families: "opt" (model_type opt) and "llama" (model_type llama, qwen2 and
mistral: RMSNorm, RoPE, SwiGLU, grouped-query attention). A third family is a
row of MODEL_TYPES, its shape reader and its parameter count here.
"""

import importlib.metadata
import json
import os
import sys

from .protocol import WorkerError, setting

# The OPT shapes are facebook/opt-*'s config.json values, as the native
# engine's presets (plugins/opt): (hidden, layers, heads, ffn, word_embed_proj_dim).
OPT_SHAPES = {
    "125m": (768, 12, 12, 3072, 768),
    "350m": (1024, 24, 16, 4096, 512),
    "1.3b": (2048, 24, 32, 8192, 2048),
    "2.7b": (2560, 32, 32, 10240, 2560),
    "6.7b": (4096, 32, 32, 16384, 4096),
    "13b": (5120, 40, 40, 20480, 5120),
    "30b": (7168, 48, 56, 28672, 7168),
    "66b": (9216, 64, 72, 36864, 9216),
}

# The Llama-family shapes: the config.json values of the published checkpoints
# on the Hugging Face hub (Qwen/Qwen2.5-0.5B, Qwen/Qwen2.5-1.5B,
# meta-llama/Llama-3.2-1B, HuggingFaceTB/SmolLM2-135M; base models, not the
# -Instruct ones, whose eos ids and positions differ), written as transformers
# 5.x writes them (rope_parameters). Random weights of these shapes have the
# published parameter counts: 494,032,768; 1,543,714,304; 1,235,814,400;
# 134,515,008 (tests/pyworker/test_protocol.py checks them).
LLAMA_PRESETS = {
    "qwen2.5-0.5b": dict(
        model_type="qwen2", vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
        num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, tie_word_embeddings=True,
        use_sliding_window=False, sliding_window=32768, max_window_layers=24, bos_token_id=151643,
        eos_token_id=151643),
    "qwen2.5-1.5b": dict(
        model_type="qwen2", vocab_size=151936, hidden_size=1536, intermediate_size=8960, num_hidden_layers=28,
        num_attention_heads=12, num_key_value_heads=2, max_position_embeddings=131072, rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 1000000.0}, tie_word_embeddings=True,
        use_sliding_window=False, sliding_window=131072, max_window_layers=28, bos_token_id=151643,
        eos_token_id=151643),
    "llama-3.2-1b": dict(
        model_type="llama", vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
        num_attention_heads=32, num_key_value_heads=8, head_dim=64, max_position_embeddings=131072,
        rms_norm_eps=1e-5, rope_parameters={"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
                                            "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                            "original_max_position_embeddings": 8192},
        tie_word_embeddings=True, attention_bias=False, mlp_bias=False, bos_token_id=128000, eos_token_id=128001),
    "smollm2-135m": dict(
        model_type="llama", vocab_size=49152, hidden_size=576, intermediate_size=1536, num_hidden_layers=30,
        num_attention_heads=9, num_key_value_heads=3, head_dim=64, max_position_embeddings=8192, rms_norm_eps=1e-5,
        rope_parameters={"rope_type": "default", "rope_theta": 100000.0}, tie_word_embeddings=True,
        attention_bias=False, mlp_bias=False, bos_token_id=0, eos_token_id=0),
}

# config.json's model_type -> the family it belongs to.
MODEL_TYPES = {"opt": "opt", "llama": "llama", "qwen2": "llama", "mistral": "llama"}

# Case dtype -> torch dtype name.
TORCH_DTYPES = {"float32": "float32", "bfloat16": "bfloat16", "float16": "float16"}


def opt_config_kwargs(shape):
    """OPTConfig keyword arguments of a built-in shape (vocab 50272, 2048
    positions, ReLU, pre-LN except 350m; pad 1, bos/eos 2)."""
    h, layers, heads, ffn, proj = OPT_SHAPES[shape]
    return dict(vocab_size=50272, hidden_size=h, num_hidden_layers=layers, num_attention_heads=heads, ffn_dim=ffn,
                word_embed_proj_dim=proj, max_position_embeddings=2048, do_layer_norm_before=shape != "350m",
                activation_function="relu", pad_token_id=1, bos_token_id=2, eos_token_id=2, dropout=0.0,
                attention_dropout=0.0, layerdrop=0.0, enable_bias=True)


def preset_config(name):
    """The config.json (a dict with its model_type) of a built-in shape."""
    if name in LLAMA_PRESETS:
        return dict(LLAMA_PRESETS[name])
    return dict(opt_config_kwargs(name), model_type="opt")


def model_settings(device_choices=("cpu", "cuda")):
    """The model settings every adapter shares, named as the native engines'
    (docs/opt.md)."""
    names = list(OPT_SHAPES) + list(LLAMA_PRESETS)
    return [
        setting("model", "string", "", "built-in shape with random weights (\"\" = OPT 125m): "
                + ", ".join(names) + "; leave it out with a checkpoint", choices=[""] + names),
        setting("checkpoint", "string", "", "Hugging Face checkpoint directory (config.json + weights) of a "
                "family the worker runs (model_type " + ", ".join(MODEL_TYPES) + "); \"\" = random weights of "
                "model's shape"),
        setting("weights_seed", "int", 0, "seed of the random weights", min_=0, max_=2**31 - 1),
        setting("threads", "int", 0, "CPU threads (0 = the engine's default)", min_=0, max_=1024),
        setting("device", "string", "cpu", "where the model runs", choices=list(device_choices)),
    ]


class Model:
    """The model of the settings, from its config alone: `desc` (describe's
    "model"), `config` (config.json's dict, or the built-in shape's), `shape`
    (model_shape's dict), `checkpoint` (the directory or ""), `preset` (the
    built-in shape's name or "") and `seed` (weights_seed)."""

    def __init__(self, desc, config, shape, checkpoint, preset, seed):
        self.desc, self.config, self.shape = desc, config, shape
        self.checkpoint, self.preset, self.seed = checkpoint, preset, seed


def resolve_model(values, engine):
    """The Model of the settings. Refuses model together with checkpoint, a
    checkpoint directory without config.json, and a model_type no worker
    runs, with WorkerError("setting") naming the setting."""
    if values["checkpoint"]:
        if values["model"]:
            raise WorkerError("setting", "setting model: leave it out with a checkpoint (its config.json gives the "
                              "shape)")
        d = values["checkpoint"]
        if not os.path.isfile(os.path.join(d, "config.json")):
            raise WorkerError("setting", "setting checkpoint: %s has no config.json" % d)
        cfg = read_checkpoint_config(d)
        shape = model_shape(cfg, "setting checkpoint: %s/config.json" % d, engine)
        shape["eos_ids"] = checkpoint_eos_ids(d, cfg) or shape["eos_ids"]
        return Model("checkpoint %s (%s)" % (os.path.abspath(d), shape["model_type"]), cfg, shape, d, "",
                     values["weights_seed"])
    name = values["model"] or "125m"
    cfg = preset_config(name)
    shape = model_shape(cfg, "setting model: %s" % name, engine)
    label = "opt-%s" % name if name in OPT_SHAPES else name
    return Model("%s shape, random weights (seed %d)" % (label, values["weights_seed"]), cfg, shape, "", name,
                 values["weights_seed"])


def _ids(v):
    """A token id or a list of them (config.json's eos_token_id) -> a list."""
    if isinstance(v, bool):
        return []
    if isinstance(v, int):
        return [v]
    if isinstance(v, list):
        return [x for x in v if isinstance(x, int) and not isinstance(x, bool)]
    return []


def checkpoint_eos_ids(directory, cfg):
    """The end-of-sequence ids generate() suppresses for the checkpoint:
    generation_config.json's when it names them, else config.json's."""
    path = os.path.join(directory, "generation_config.json")
    try:
        with open(path, encoding="utf-8") as f:
            gen = json.load(f)
    except (OSError, ValueError):
        gen = {}
    return _ids(gen.get("eos_token_id")) if isinstance(gen, dict) else []


def rope_type(cfg):
    """The RoPE scaling type of a Llama-family config.json in either spelling
    transformers writes (5.x rope_parameters, 4.x rope_scaling), "default"
    when there is none."""
    for key in ("rope_parameters", "rope_scaling"):
        rp = cfg.get(key)
        if isinstance(rp, dict):
            t = rp.get("rope_type") or rp.get("type")
            if t:
                return t
    return "default"


def model_shape(cfg, where, engine):
    """The shape of a config.json dict as one dict: family, model_type,
    vocab_size, hidden_size, n_layers, n_heads, n_kv_heads, head_dim,
    ffn_size, max_positions (None when not given), parameters (lm_head
    counted once when tied), pad_id (pad, else the first eos, else 0) and
    eos_ids. WorkerError("setting") prefixed with `where` for a model_type
    outside MODEL_TYPES or a missing key."""
    mt = cfg.get("model_type")
    family = MODEL_TYPES.get(mt)
    if family is None:
        raise WorkerError("setting", "%s: model_type %s is not a family the %s worker runs (it runs model_type %s)"
                          % (where, json.dumps(mt), engine, ", ".join(MODEL_TYPES)))
    try:
        V, H, L = cfg["vocab_size"], cfg["hidden_size"], cfg["num_hidden_layers"]
        nH = cfg["num_attention_heads"]
        F = cfg["ffn_dim"] if family == "opt" else cfg["intermediate_size"]
    except KeyError as e:
        raise WorkerError("setting", "%s: config.json of model_type %s has no %s" % (where, mt, e)) from e
    if family == "opt":
        nKV, hd = nH, H // nH
        params = opt_parameters(cfg)
        max_pos = cfg.get("max_position_embeddings", 2048)
    else:
        nKV = cfg.get("num_key_value_heads") or nH
        hd = cfg.get("head_dim") or H // nH
        params = llama_parameters(cfg, mt, V, H, L, nH, nKV, hd, F)
        max_pos = cfg.get("max_position_embeddings")
    eos = _ids(cfg.get("eos_token_id"))
    pad = cfg.get("pad_token_id")
    if not isinstance(pad, int) or isinstance(pad, bool):
        pad = eos[0] if eos else 0
    return dict(family=family, model_type=mt, vocab_size=V, hidden_size=H, n_layers=L, n_heads=nH, n_kv_heads=nKV,
                head_dim=hd, ffn_size=F, max_positions=max_pos, parameters=params, pad_id=pad, eos_ids=eos,
                bos_id=cfg.get("bos_token_id") if isinstance(cfg.get("bos_token_id"), int) else None)


def opt_parameters(cfg):
    """Parameters of an OPT causal LM with lm_head tied (counted once), from
    its config: embeddings, positions (+2 offset), project_in/out when the
    embedding width differs, the layers, the final layer norm (pre-LN)."""
    V, H, L, F = cfg["vocab_size"], cfg["hidden_size"], cfg["num_hidden_layers"], cfg["ffn_dim"]
    P, E = cfg.get("max_position_embeddings", 2048), cfg.get("word_embed_proj_dim") or H
    n = V * E + (P + 2) * H + L * (4 * (H * H + H) + (H * F + F) + (F * H + H) + 4 * H)
    if E != H:
        n += 2 * H * E
    if cfg.get("do_layer_norm_before", True):
        n += 2 * H
    return n


def llama_parameters(cfg, mt, V, H, L, nH, nKV, hd, F):
    """Parameters of a Llama-family causal LM, as transformers builds it:
    embeddings, lm_head unless tied (tie_word_embeddings, default false),
    per layer q/k/v/o (q/k/v biases for qwen2; q/k/v/o biases with llama's
    attention_bias), gate/up/down (biases with llama's mlp_bias) and two
    RMSNorm weights, and the final RMSNorm."""
    qkv_bias = mt == "qwen2" or (mt == "llama" and cfg.get("attention_bias", False))
    o_bias = mt == "llama" and cfg.get("attention_bias", False)
    mlp_bias = mt == "llama" and cfg.get("mlp_bias", False)
    attn = H * nH * hd + 2 * H * nKV * hd + nH * hd * H
    if qkv_bias:
        attn += nH * hd + 2 * nKV * hd
    if o_bias:
        attn += H
    mlp = 3 * H * F + (2 * F + H if mlp_bias else 0)
    n = V * H + L * (attn + mlp + 2 * H) + H
    if not cfg.get("tie_word_embeddings", False):
        n += V * H
    return n


def describe_reply(model, dtypes):
    """describe's reply for a Model, from its config alone (nothing is loaded
    or imported)."""
    s = model.shape
    d = {"model": model.desc, "parameters": s["parameters"], "dtypes": list(dtypes), "vocab_size": s["vocab_size"],
         "model_family": s["family"], "n_layers": s["n_layers"], "hidden_size": s["hidden_size"],
         "n_heads": s["n_heads"], "ffn_size": s["ffn_size"]}
    if s["max_positions"]:
        d["max_positions"] = s["max_positions"]
    return d


def check_case_fits(case, prompt_ids, shape):
    """Raises WorkerError("infeasible") when the prompts hold ids outside the
    model's vocabulary or prompt + response exceed its positions."""
    top = max(max(r) for r in prompt_ids)
    if top >= shape["vocab_size"]:
        raise WorkerError("infeasible", "prompt ids reach %d, the model's vocabulary has %d"
                          % (top, shape["vocab_size"]))
    need = max(len(r) for r in prompt_ids) + case["response_length"]
    if shape["max_positions"] and need > shape["max_positions"]:
        raise WorkerError("infeasible", "prompt + response = %d tokens, the model has %d positions"
                          % (need, shape["max_positions"]))


def read_checkpoint_config(directory):
    """The checkpoint's config.json as a dict; WorkerError("setting") when unreadable."""
    path = os.path.join(directory, "config.json")
    try:
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
    except (OSError, ValueError) as e:
        raise WorkerError("setting", "setting checkpoint: %s: %s" % (path, e)) from e
    if not isinstance(cfg, dict):
        raise WorkerError("setting", "setting checkpoint: %s is not a JSON object" % path)
    return cfg


def package_version(name):
    """An installed distribution's version without importing it, or None."""
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def require_packages(engine, names):
    """Raises WorkerError("unsupported") naming the missing packages."""
    missing = [n for n in names if package_version(n) is None]
    if missing:
        raise WorkerError("unsupported", "%s: %s not installed for %s (tools/peers-venv makes an environment "
                          "with them)" % (engine, " and ".join(missing), os.path.realpath(sys.executable)))


def reset_peak_rss():
    """Resets the process's peak RSS (VmHWM; Linux >= 4.0); False if it cannot."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_rss_bytes():
    """The process's peak RSS since the last reset, or None."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None


# OPT's special tokens at ids 0-3; every other id i is the string "t<i>", so a
# synthetic vocabulary maps token strings to ids one to one. The Llama family
# has no fixed special ids: every id i is "t<i>" there.
SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>")


def token_string(i, family="opt"):
    return SPECIAL_TOKENS[i] if family == "opt" and i < len(SPECIAL_TOKENS) else "t%d" % i


def token_id(s):
    return SPECIAL_TOKENS.index(s) if s in SPECIAL_TOKENS else int(s[1:])


class Vocabulary:
    """The synthetic vocabulary of a shape, with the special tokens an engine
    reads from a tokenizer: bos, the eos tokens (generation stops on any and
    suppresses all until the forced length), unk and pad."""

    def __init__(self, shape):
        self.family, self.size = shape["family"], shape["vocab_size"]
        if self.family == "opt":
            self.bos_token, self.eos_tokens, self.unk_token, self.pad_token = "</s>", ["</s>"], "<unk>", "<pad>"
        else:
            bos = shape["bos_id"] if shape["bos_id"] is not None else shape["pad_id"]
            self.bos_token = self.string(bos)
            self.eos_tokens = [self.string(i) for i in shape["eos_ids"]] or [self.string(shape["pad_id"])]
            self.unk_token, self.pad_token = self.string(0), self.string(shape["pad_id"])
        self.eos_token = self.eos_tokens[0]

    def string(self, i):
        return token_string(i, self.family)

    def get_vocab(self):
        return {self.string(i): i for i in range(self.size)}


def left_pad(rows, pad_id):
    """Prompt rows of different lengths -> (ids, mask) lists, left-padded to
    the longest, as the native engine pads a prompts file."""
    width = max(len(r) for r in rows)
    ids = [[pad_id] * (width - len(r)) + list(r) for r in rows]
    mask = [[0] * (width - len(r)) + [1] * len(r) for r in rows]
    return ids, mask
