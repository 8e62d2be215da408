#!/usr/bin/env python3
"""make_hostile_corpus.py: writes the seed corpora of fuzz_worker, fuzz_vocab_merges and fuzz_lora
(tests/fuzz/corpus/{worker,vocab_merges,lora}/): what a hostile peer or a careless file hands the
worker backend, the tokenizer and the LoRA loader, each next to a sound one. Plain Python.
  worker: first byte 0 a hello line, 1 a generate reply (after 5 bytes of case shape and round
          trip), 2 a describe reply (tests/fuzz/fuzz_worker.c);
  vocab_merges: vocab.json NUL merges.txt, or a merges.txt alone (golden vocabulary);
  lora: adapter_config.json NUL adapter_model.safetensors, or a config alone (golden tensors).
Usage: python3 tests/fuzz/make_hostile_corpus.py"""
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
GOLDEN_VM = os.path.join(HERE, "..", "tokenizer", "golden", "vocab_merges")
GOLDEN_LORA = os.path.join(HERE, "..", "opt", "golden", "preln_lora")


def write(target, name, data):
    out = os.path.join(HERE, "corpus", target)
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "seed-" + name), "wb") as f:
        f.write(data)


def line(o):
    return json.dumps(o, separators=(",", ":")).encode()


def worker():
    hello = {"op": "hello", "protocol": 1, "engine": "fake", "engine_version": "1.0", "device": "cpu",
             "settings": [{"name": "model", "type": "string", "default": "tiny", "choices": ["tiny", "small"],
                           "help": "h"},
                          {"name": "threads", "type": "int", "default": 0, "min": 0, "help": "t"},
                          {"name": "scale", "type": "double", "default": 1.0, "help": "s"},
                          {"name": "chatty", "type": "bool", "default": False, "help": "c"}],
             "metrics": [{"name": "fake_queue_depth", "unit": "requests", "better": "lower", "min": 0, "max": 1000},
                         {"name": "occupancy", "unit": "1", "better": "higher", "min": 0, "max": 1}]}
    seeds = {"hello": hello,
             "hello-min": {"op": "hello", "protocol": 1, "engine": "min", "engine_version": "0", "device": "cpu",
                           "settings": []},
             "hello-dup": dict(hello, settings=hello["settings"] + [hello["settings"][0]]),
             "hello-reserved": dict(hello, settings=[{"name": "command", "type": "string", "default": "", "help": ""}]),
             "hello-metric-range": dict(hello, metrics=[{"name": "x", "unit": "ms", "better": "lower", "min": 5,
                                                         "max": 1}]),
             "hello-protocol2": dict(hello, protocol=2)}
    for name, o in seeds.items():
        write("worker", name, b"\x00" + line(o))
    write("worker", "hello-array", b"\x00[1,2]")
    write("worker", "hello-bigint", b'\x00{"op":"hello","protocol":99999999999999999999}')
    write("worker", "hello-many", b"\x00" + line(dict(hello, settings=[
        {"name": "x%d" % i, "type": "int", "default": 0, "help": ""} for i in range(60)])))
    good = {"profile": {"prompt_expansion_ms": 0.1, "generation_ms": 1.0, "post_processing_ms": 0.1,
                        "prefill_forward_ms": 0.2, "decode_forward_ms": 0.5, "num_decode_forwards": 7,
                        "num_generated_tokens": 16, "time_to_first_token_ms": 0.3, "peak_memory_bytes": 1048576,
                        "decode_step_ms": [0.1] * 7, "num_prefill_forwards": 1, "continuous_batch_size": 2},
            "tokens": [[1, 2, 3, 4, 5, 6, 7, 8], [9, 10, 11, 12, 13, 14, 15, 16]]}
    shape = bytes([1, 3, 7, 96, 20])  # rows 2, prompt 4, response 8, vocab 100, round trip 20 ms
    replies = {"gen": good,
               "gen-issue": {"profile": {"generation_ms": 1.0, "num_generated_tokens": 16,
                                         "num_decode_forwards": 4611686018427387904}},
               "gen-negative": {"profile": dict(good["profile"], generation_ms=-5.0)},
               "gen-huge": {"profile": dict(good["profile"], post_processing_ms=1e308)},
               "gen-tokens-vocab": dict(good, tokens=[[100] * 8, [1] * 8]),
               "gen-tokens-shape": dict(good, tokens=[list(range(16))]),
               "gen-tokens-types": dict(good, tokens=[["a", None, 1.5, 1, 1, 1, 1, 1], [1] * 8]),
               "gen-steps": {"profile": dict(good["profile"], decode_step_ms=[0.1, -1, "x"])}}
    for name, o in replies.items():
        write("worker", name, b"\x01" + shape + line(o))
    write("worker", "gen-bigint", b"\x01" + shape + b'{"profile":{"num_generated_tokens":18446744073709551616}}')
    describes = {"describe": {"model": "m", "dtypes": ["float32"], "vocab_size": 300, "max_positions": 2048,
                              "parameters": 1000, "n_layers": 2, "hidden_size": 8, "n_heads": 2, "ffn_size": 32},
                 "describe-vocab": {"model": "m", "dtypes": ["float32"], "vocab_size": 1099511627776},
                 "describe-negative": {"model": "m", "dtypes": [], "vocab_size": 300, "n_layers": -2,
                                       "parameters": 1.5}}
    for name, o in describes.items():
        write("worker", name, b"\x02" + line(o))


def vocab_merges():
    vocab = open(os.path.join(GOLDEN_VM, "vocab.json"), "rb").read()
    merges = open(os.path.join(GOLDEN_VM, "merges.txt"), "rb").read()
    write("vocab_merges", "golden", vocab + b"\x00" + merges)
    write("vocab_merges", "merges-only", merges)
    lines = merges.split(b"\n")
    write("vocab_merges", "three-fields", b"\n".join(lines[:3] + [b"a b c"] + lines[3:20]))
    write("vocab_merges", "crlf", merges.replace(b"\n", b"\r\n")[:400])
    write("vocab_merges", "unknown-token", b"#version: 0.2\nh e\nzz qq\n")
    small = {"a": 0, "b": 1, "ab": 2, "c": 3, "abc": 4}
    write("vocab_merges", "small", json.dumps(small).encode() + b"\x00a b\nab c\n")
    write("vocab_merges", "bad-json", b'{"a": 0,\x00a b\n')


def safetensors(tensors):
    """tensors: name -> (shape, list of floats): an F32 safetensors file."""
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name, (shape, values) in tensors.items():
        blob = struct.pack("<%df" % len(values), *values)
        header[name] = {"dtype": "F32", "shape": shape, "data_offsets": [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def lora():
    cfg = open(os.path.join(GOLDEN_LORA, "adapter_config.json"), "rb").read()
    tensors = open(os.path.join(GOLDEN_LORA, "adapter_model.safetensors"), "rb").read()
    write("lora", "golden", cfg + b"\x00" + tensors)
    write("lora", "config-only", cfg)
    small_cfg = json.dumps({"r": 1, "lora_alpha": 2, "target_modules": ["q_proj"], "bias": "none"}).encode()
    prefix = "base_model.model.model.decoder.layers.%d.self_attn.q_proj.lora_%s.weight"
    small = {}
    for l in range(2):
        small[prefix % (l, "A")] = ([1, 64], [0.01 * (i % 7) for i in range(64)])
        small[prefix % (l, "B")] = ([64, 1], [0.02 * (i % 5) for i in range(64)])
    write("lora", "q-rank1", small_cfg + b"\x00" + safetensors(small))
    nan = dict(small)
    nan[prefix % (1, "A")] = ([1, 64], [float("nan")] + [0.0] * 63)
    write("lora", "q-nan", small_cfg + b"\x00" + safetensors(nan))
    inf = dict(small)
    inf[prefix % (0, "B")] = ([64, 1], [0.0] * 3 + [float("inf")] + [0.0] * 60)
    write("lora", "q-inf", small_cfg + b"\x00" + safetensors(inf))
    huge = json.dumps({"r": 1, "lora_alpha": 1e308, "target_modules": ["q_proj"]}).encode()
    write("lora", "alpha-huge", huge + b"\x00" + safetensors(small))
    write("lora", "shape-wrong", small_cfg + b"\x00" + safetensors({k: ([2, 32], v[1]) for k, v in small.items()}))


def main():
    worker()
    vocab_merges()
    lora()
    for target in ("worker", "vocab_merges", "lora"):
        d = os.path.join(HERE, "corpus", target)
        print("%s: %d seeds" % (target, len(os.listdir(d))))


if __name__ == "__main__":
    main()
