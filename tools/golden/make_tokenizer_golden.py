#!/usr/bin/env python3
"""make_tokenizer_golden.py: the tokenizer's golden data (tests/tokenizer).

Trains a tiny byte-level BPE with Hugging Face `tokenizers` (pip install
tokenizers; nothing is downloaded) on a corpus this script writes, and saves
it three ways under tests/tokenizer/golden/:

  json_pairs/tokenizer.json     merges as ["a", "b"] pairs (what tokenizers writes)
  json_strings/tokenizer.json   the same, merges as "a b" strings (older files)
  vocab_merges/vocab.json + merges.txt

and cases.json: for each hard string (and a few hundred seeded random mixes
of hard characters) its bytes in hex and the ids the Python tokenizer gives;
prompts.jsonl, a small text prompt set (JSON lines, field "text"), with
prompts_ids.txt, the ids tokenizers gives each prompt after OPT's BOS (2),
one line each: what `benchctl prompts` must print (tests/e2e/prompts.sh).

Invalid UTF-8 cannot be handed to tokenizers (it takes str). For those
strings the reference is built from its parts: the text decoded with each
invalid sequence replaced by U+FFFD (a character of class "other", as the C
split treats each invalid byte) is split by tokenizers' own pre-tokenizer,
the pieces are mapped back to the original bytes, and tokenizers' BPE model
encodes each piece's bytes. For valid strings the same path is checked
against tokenizer.encode().

Run:  tools/golden/.venv/bin/python tools/golden/make_tokenizer_golden.py
"""
import codecs
import json
import os
import random

import tokenizers
from tokenizers import Tokenizer, models, pre_tokenizers, decoders, trainers

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(ROOT, "tests", "tokenizer", "golden")
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]  # OPT's ids 0..3

HARD = [
    b"", b" ", b"  ", b"   ", b"\t", b"\t\t", b" \t", b"\n", b"\n\n\n", b"\r\n", b" \n ", b"\n\n  \n",
    b"  leading spaces", b"trailing spaces  ", b"  both  ", b"x  y", b"x \n y", b"x\t\ty", b"a \n\nb",
    b"I'm sure we'll see they've done it, can't you? She'd say it's yours, you're right.",
    b"DON'T SHOUT, IT'S LOUD", b"'s 't 're 've 'm 'll 'd", b"''s", b"'", b"rock 'n' roll", b"o'clock",
    b"1234567890", b"12 345 6789 0", b"a1b2c3", b"3.14159", b"-42", b"1,000,000", b" 2024",
    "Hello, world! How are you?".encode(), b"!!!??? ...", b" !!", b"a--b", b"(x)[y]{z}", b"\"quoted\"",
    "\U0001F600 \U0001F44D\U0001F3FD \U0001F468\u200d\U0001F469\u200d\U0001F467 emoji".encode(),
    "日本語のテキスト、中文文本。 한국어".encode(), "naïve café façade".encode(),
    "e\u0301 cafe\u0301 a\u0308o\u0308 \u0301start".encode(), "Ελληνικά Русский עברית العربية".encode(),
    "½ Ⅻ ٣ ² ①".encode(), "a\u00a0b\u3000c\u2028d\u2029e\u0085f".encode(), b"\x1c\x1d\x1e\x1f", b"\x0b\x0c",
    "\u200b zero width".encode(), "\ufeffbom".encode(), "\ufffd replacement".encode(),
    b"\xff\xfe", b"abc\x80def", b"\xe2\x82", b" \xc3", b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
    b"ok \xff ok", b"\xf0\x9f\x98", b"tab\t\xfe\n", b"\x00nul\x00", b"caf\xc3\xa9\xc3",
]

# characters the random mixes are drawn from
ALPHABET = (list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789") + [" "] * 12 +
            ["\t", "\n", "\r", "'", "'", "s", "t", "re", "ll", ",", ".", "!", "?", "-", "\u00a0", "\u3000",
             "é", "e\u0301", "日", "本", "語", "😀", "👍🏽", "½", "٣", "\u2028", "\x1f", "Ω", "ß", "\u200d"])
INVALID = [b"\xff", b"\x80", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80", b"\xc0"]

CORPUS_LINES = [
    "The quick brown fox jumps over the lazy dog. It's a test; we'll see.",
    "Reinforcement learning from human feedback generates rollouts, then updates the policy.",
    "Numbers like 1234, 2024 and 3.14159 appear in text, as do dates such as 2023-11-30.",
    "  Indented code:\n\tdef f(x):\n\t\treturn x + 1\n",
    "I'm, you're, they've, she'd, he'll, don't, can't, won't: contractions everywhere.",
    "日本語の文章と中文的句子，还有한국어 문장。",
    "Emoji 😀 and 👍🏽 and café, naïve, façade, Ελληνικά, Русский.",
    "Whitespace   runs,\n\nnew lines\n\n\nand trailing spaces   ",
]


def write_corpus(path):
    rnd = random.Random(14)
    with open(path, "w", encoding="utf-8") as f:
        for _ in range(300):
            line = rnd.choice(CORPUS_LINES)
            words = line.split(" ")
            rnd.shuffle(words)
            f.write(" ".join(words) + "\n")
            f.write(line + "\n")


def train(corpus):
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=700, min_frequency=2, special_tokens=SPECIALS,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train([corpus], trainer)
    return tok


def byte_level_map():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


BYTE_CHAR = byte_level_map()


def lossy(data):
    """The text with each invalid sequence replaced by U+FFFD, and each
    character's length in bytes of data."""
    spans = []

    def handler(e):
        spans.append((e.start, e.end))
        return ("\ufffd", e.end)

    codecs.register_error("bc_record", handler)
    text = data.decode("utf-8", errors="bc_record")
    lens, i, si = [], 0, 0
    for ch in text:
        if si < len(spans) and spans[si][0] == i and ch == "\ufffd":
            n = spans[si][1] - spans[si][0]
            si += 1
        else:
            n = len(ch.encode("utf-8"))
        lens.append(n)
        i += n
    assert i == len(data)
    return text, lens


def reference_ids(tok, data):
    text, lens = lossy(data)
    starts = [0]
    for n in lens:
        starts.append(starts[-1] + n)
    ids = []
    for _piece, (a, b) in tok.pre_tokenizer.pre_tokenize_str(text):
        raw = data[starts[a]:starts[b]]
        ids += [t.id for t in tok.model.tokenize("".join(BYTE_CHAR[x] for x in raw))]
    try:
        valid = data.decode("utf-8")
    except UnicodeDecodeError:
        return ids
    direct = tok.encode(valid, add_special_tokens=False).ids
    assert direct == ids, (data, direct, ids)
    assert tok.decode(direct, skip_special_tokens=False) == valid, data
    return ids


def random_mixes(n):
    rnd = random.Random(1414)
    out = []
    for _ in range(n):
        parts = []
        for _ in range(rnd.randint(1, 24)):
            if rnd.random() < 0.04:
                parts.append(rnd.choice(INVALID))
            else:
                parts.append(rnd.choice(ALPHABET).encode("utf-8"))
        out.append(b"".join(parts))
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    corpus = os.path.join(OUT, "corpus.txt")
    write_corpus(corpus)
    tok = train(corpus)
    for sub in ("json_pairs", "json_strings", "vocab_merges"):
        os.makedirs(os.path.join(OUT, sub), exist_ok=True)
    tok.save(os.path.join(OUT, "json_pairs", "tokenizer.json"), pretty=False)
    with open(os.path.join(OUT, "json_pairs", "tokenizer.json"), encoding="utf-8") as f:
        spec = json.load(f)
    merges = spec["model"]["merges"]
    assert merges and isinstance(merges[0], list), "tokenizers wrote merges as strings; expected pairs"
    spec["model"]["merges"] = [a + " " + b for a, b in merges]
    with open(os.path.join(OUT, "json_strings", "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(spec, f, ensure_ascii=False)
    tok.model.save(os.path.join(OUT, "vocab_merges"))
    cases = []
    for data in HARD + random_mixes(300):
        cases.append({"hex": data.hex(), "ids": reference_ids(tok, data)})
    with open(os.path.join(OUT, "cases.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizers_version": tokenizers.__version__, "vocab_size": tok.get_vocab_size(),
                   "n_merges": len(merges), "cases": cases}, f, indent=0)
    prompts = [line for line in CORPUS_LINES if "\n" not in line] + ["  leading spaces", "x  y", "It's 2024!"]
    with open(os.path.join(OUT, "prompts.jsonl"), "w", encoding="utf-8") as f:
        for i, text in enumerate(prompts):
            f.write(json.dumps({"id": i, "text": text}, ensure_ascii=False) + "\n")
    with open(os.path.join(OUT, "prompts_ids.txt"), "w") as f:
        for text in prompts:
            f.write(" ".join(str(i) for i in [2] + tok.encode(text, add_special_tokens=False).ids) + "\n")
    print(f"{len(cases)} cases, vocab {tok.get_vocab_size()}, {len(merges)} merges -> {OUT}")


if __name__ == "__main__":
    main()
