"""models.py: what the adapters share about the model (standard library only):
the built-in OPT shapes, the model settings, checkpoint checks, the process's
peak RSS, and a synthetic vocabulary for engines that want token strings.

The shapes are facebook/opt-*'s config.json values, as the native engine's
presets (plugins/opt/opt_model.c): (hidden, layers, heads, ffn, word_embed_proj_dim).
"""

import importlib.metadata
import json
import os
import sys

from .protocol import WorkerError, setting

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


def model_settings(device_choices=("cpu", "cuda")):
    """The model settings every adapter shares, named as the native engine's
    (docs/opt.md)."""
    return [
        setting("model", "string", "", "built-in OPT shape with random weights (\"\" = 125m): "
                + ", ".join(OPT_SHAPES) + "; leave it out with a checkpoint", choices=[""] + list(OPT_SHAPES)),
        setting("checkpoint", "string", "", "Hugging Face OPT checkpoint directory (config.json + weights); "
                "\"\" = random weights of model's shape"),
        setting("weights_seed", "int", 0, "seed of the random weights", min_=0, max_=2**31 - 1),
        setting("threads", "int", 0, "CPU threads (0 = the engine's default)", min_=0, max_=1024),
        setting("device", "string", "cpu", "where the model runs", choices=list(device_choices)),
    ]


def check_model_settings(values):
    """Refuses model together with checkpoint, and a checkpoint directory
    without config.json; returns the model's description."""
    if values["checkpoint"]:
        if values["model"]:
            raise WorkerError("setting", "setting model: leave it out with a checkpoint (its config.json gives the "
                              "shape)")
        cfg = os.path.join(values["checkpoint"], "config.json")
        if not os.path.isfile(cfg):
            raise WorkerError("setting", "setting checkpoint: %s has no config.json" % values["checkpoint"])
        return "checkpoint %s" % os.path.abspath(values["checkpoint"])
    return "opt-%s shape, random weights (seed %d)" % (values["model"] or "125m", values["weights_seed"])


def model_config(values):
    """The OPT config of the settings as a dict: the checkpoint's config.json
    or the built-in shape's."""
    if values["checkpoint"]:
        return read_checkpoint_config(values["checkpoint"])
    return opt_config_kwargs(values["model"] or "125m")


def opt_parameters(cfg):
    """Parameters of an OPT causal LM with lm_head tied (counted once), from
    its config: embeddings, positions (+2 offset), project_in/out when the
    embedding width differs, the layers, the final layer norm (pre-LN)."""
    V, H, L, F = cfg["vocab_size"], cfg["hidden_size"], cfg["num_hidden_layers"], cfg["ffn_dim"]
    P, E = cfg["max_position_embeddings"], cfg.get("word_embed_proj_dim") or H
    n = V * E + (P + 2) * H + L * (4 * (H * H + H) + (H * F + F) + (F * H + H) + 4 * H)
    if E != H:
        n += 2 * H * E
    if cfg.get("do_layer_norm_before", True):
        n += 2 * H
    return n


def describe_reply(desc, values, dtypes):
    """describe's reply for the model of the settings, from its config alone
    (nothing is loaded or imported)."""
    cfg = model_config(values)
    try:
        return {"model": desc, "parameters": opt_parameters(cfg), "dtypes": list(dtypes),
                "vocab_size": cfg["vocab_size"], "max_positions": cfg["max_position_embeddings"],
                "model_family": "opt", "n_layers": cfg["num_hidden_layers"], "hidden_size": cfg["hidden_size"],
                "n_heads": cfg["num_attention_heads"], "ffn_size": cfg["ffn_dim"]}
    except KeyError as e:
        raise WorkerError("setting", "setting checkpoint: config.json has no %s" % e) from e


def check_case_fits(case, prompt_ids, cfg):
    """Raises WorkerError("infeasible") when the prompts hold ids outside the
    model's vocabulary or prompt + response exceed its positions."""
    top = max(max(r) for r in prompt_ids)
    if top >= cfg["vocab_size"]:
        raise WorkerError("infeasible", "prompt ids reach %d, the model's vocabulary has %d" % (top, cfg["vocab_size"]))
    need = max(len(r) for r in prompt_ids) + case["response_length"]
    if need > cfg["max_position_embeddings"]:
        raise WorkerError("infeasible", "prompt + response = %d tokens, the model has %d positions"
                          % (need, cfg["max_position_embeddings"]))


def read_checkpoint_config(directory):
    """The checkpoint's config.json as a dict; WorkerError("setting") when unreadable."""
    path = os.path.join(directory, "config.json")
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        raise WorkerError("setting", "setting checkpoint: %s: %s" % (path, e)) from e


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
# synthetic vocabulary maps token strings to ids one to one.
SPECIAL_TOKENS = ("<s>", "<pad>", "</s>", "<unk>")


def token_string(i):
    return SPECIAL_TOKENS[i] if i < len(SPECIAL_TOKENS) else "t%d" % i


def token_id(s):
    return SPECIAL_TOKENS.index(s) if s in SPECIAL_TOKENS else int(s[1:])


def left_pad(rows, pad_id):
    """Prompt rows of different lengths -> (ids, mask) lists, left-padded to
    the longest, as the native engine pads a prompts file."""
    width = max(len(r) for r in rows)
    ids = [[pad_id] * (width - len(r)) + list(r) for r in rows]
    mask = [[0] * (width - len(r)) + [1] * len(r) for r in rows]
    return ids, mask
