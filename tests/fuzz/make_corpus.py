#!/usr/bin/env python3
"""make_corpus.py: writes the seed corpus of fuzz_safetensors
(tests/fuzz/corpus/safetensors/): small valid files and one of each malformed
header the parser must refuse. Plain Python, no dependencies.
Usage: python3 tests/fuzz/make_corpus.py"""
import json
import os
import struct

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "safetensors")


def st(header, data=b"", hlen=None, raw_header=None):
    h = raw_header if raw_header is not None else json.dumps(header, separators=(",", ":")).encode()
    return struct.pack("<Q", len(h) if hlen is None else hlen) + h + data


def t(dtype, shape, b, e):
    return {"dtype": dtype, "shape": shape, "data_offsets": [b, e]}


SEEDS = {
    "valid_one_f32": st({"w": t("F32", [2, 2], 0, 16)}, bytes(range(16))),
    "valid_mixed": st({"__metadata__": {"format": "pt"}, "a": t("BF16", [3], 0, 6), "b": t("F16", [1, 2], 6, 10),
                       "c": t("I64", [1], 10, 18), "z": t("F32", [0], 18, 18)}, bytes(18)),
    "valid_opt_names": st({"model.decoder.embed_tokens.weight": t("F32", [4, 2], 0, 32),
                           "model.decoder.layers.0.fc1.bias": t("F32", [2], 32, 40)}, bytes(40)),
    "valid_padded_header": st(None, bytes(4), raw_header=b'{"x":{"dtype":"U8","shape":[4],"data_offsets":[0,4]}}    '),
    "valid_empty": st({}),
    "short": b"\x05\x00\x00",
    "huge_len": st({}, hlen=1 << 62),
    "len_past_end": st({}, hlen=4096),
    "bad_json": st(None, raw_header=b'{"x":{"dtype":"F32",'),
    "not_object": st(None, raw_header=b"[1,2,3]"),
    "dup_key": st(None, raw_header=b'{"x":1,"x":2}'),
    "unknown_dtype": st({"w": t("F17", [1], 0, 4)}, bytes(4)),
    "neg_shape": st({"w": t("F32", [-1], 0, 4)}, bytes(4)),
    "float_shape": st({"w": t("F32", [1.5], 0, 4)}, bytes(4)),
    "overflow_shape": st({"w": t("F32", [2**32, 2**32], 0, 4)}, bytes(4)),
    "offsets_reversed": st({"w": t("F32", [1], 4, 0)}, bytes(4)),
    "offsets_past_end": st({"w": t("F32", [4], 0, 16)}, bytes(12)),
    "size_mismatch": st({"w": t("F32", [2], 0, 4)}, bytes(4)),
    "overlap": st({"a": t("F32", [2], 0, 8), "b": t("F32", [2], 4, 12)}, bytes(12)),
    "hole": st({"a": t("F32", [1], 0, 4), "b": t("F32", [1], 8, 12)}, bytes(12)),
    "tail": st({"a": t("F32", [1], 0, 4)}, bytes(8)),
    "bad_metadata": st({"__metadata__": {"format": 1}}),
    "nul_in_key": st(None, raw_header=b'{"a\x00b":{}}'),
    "extra_key": st({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4], "x": 0}}, bytes(4)),
}


def write_seeds(out, seeds):
    """Writes each seed of seeds (name -> bytes) to out/name."""
    os.makedirs(out, exist_ok=True)
    for name, blob in seeds.items():
        with open(os.path.join(out, name), "wb") as f:
            f.write(blob)
    print(f"wrote {len(seeds)} seeds to {out}")


def main():
    write_seeds(OUT, SEEDS)


if __name__ == "__main__":
    main()
