#!/usr/bin/env python3
"""make_tokenizer_corpus.py: writes the seed corpus of fuzz_tokenizer
(tests/fuzz/corpus/tokenizer/). First byte 0: text to encode with the golden
GPT-2 tokenizer (the hard strings of tests/tokenizer/golden/cases.json);
first byte 2: text for the golden Llama-3 style tokenizer (the hard strings
of golden/llama3/cases.json, special tokens among them); first byte 1: a
tokenizer.json to load (small valid ones with both spellings of merges, the
Split pre-tokenizer shape, and refused ones). Plain Python.
Usage: python3 tests/fuzz/make_tokenizer_corpus.py"""
import hashlib
import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "tokenizer")
CASES = os.path.join(HERE, "..", "tokenizer", "golden", "cases.json")
SPLIT_CASES = os.path.join(HERE, "..", "tokenizer", "golden", "llama3", "cases.json")
LLAMA3_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
                  r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")


def split_pre(pattern, behavior="Isolated", use_regex=False):
    return {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": behavior, "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": use_regex}]}


def byte_vocab():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs, n = {}, 0
    for b in range(256):
        if b in bs:
            cs[b] = chr(b)
        else:
            cs[b] = chr(256 + n)
            n += 1
    return {cs[b]: b for b in range(256)}


def tokenizer_json(merges, extra_vocab, **top):
    vocab = byte_vocab()
    vocab.update(extra_vocab)
    spec = {"model": {"type": "BPE", "vocab": vocab, "merges": merges},
            "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "use_regex": True},
            "added_tokens": [{"id": 300, "content": "</s>"}]}
    spec.update(top)
    return json.dumps(spec, ensure_ascii=False).encode()


def main():
    os.makedirs(OUT, exist_ok=True)
    seeds = []
    with open(CASES, encoding="utf-8") as f:
        for c in json.load(f)["cases"][:80]:
            seeds.append(b"\x00" + bytes.fromhex(c["hex"]))
    with open(SPLIT_CASES, encoding="utf-8") as f:
        for c in json.load(f)["cases"][:90]:
            seeds.append(b"\x02" + bytes.fromhex(c["hex"]))
    ab = {"ab": 256, "\u0120t": 257, "\u0120th": 258}
    split = {"pre_tokenizer": split_pre(LLAMA3_PATTERN), "decoder": {"type": "ByteLevel"}}
    seeds.append(b"\x01" + tokenizer_json([["a", "b"], ["\u0120", "t"]], ab, **split))
    seeds.append(b"\x01" + tokenizer_json([["a", "b"]], ab, pre_tokenizer=split_pre("(a"), decoder={"type": "ByteLevel"}))
    seeds.append(b"\x01" + tokenizer_json([["a", "b"]], ab, pre_tokenizer=split_pre(LLAMA3_PATTERN, "Removed")))
    seeds.append(b"\x01" + tokenizer_json([["a", "b"]], ab, pre_tokenizer=split_pre(r"\s*|a", use_regex=False)))
    seeds.append(b"\x01" + tokenizer_json([["a", "b"]], ab, normalizer={"type": "NFC"}, note="e\u0301 A\u030a \u212b",
                                           pre_tokenizer=split_pre(LLAMA3_PATTERN), decoder={"type": "ByteLevel"}))
    seeds.append(b"\x01" + tokenizer_json(["a b", "\u0120 t", "\u0120t h"], ab))
    seeds.append(b"\x01" + tokenizer_json([["a", "b"], ["\u0120", "t"], ["\u0120t", "h"]], ab))
    seeds.append(b"\x01" + tokenizer_json([], ab))
    seeds.append(b"\x01" + tokenizer_json(["a c"], ab))
    seeds.append(b"\x01" + tokenizer_json(["a b"], ab, normalizer={"type": "NFC"}))
    seeds.append(b"\x01{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, \"merges\": [\"a a\"]}}")
    for s in seeds:
        with open(os.path.join(OUT, hashlib.sha1(s).hexdigest()), "wb") as f:
            f.write(s)
    print(f"{len(seeds)} seeds -> {OUT}")


if __name__ == "__main__":
    main()
