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

Then two tokenizers of the Split pre-tokenizer shape (a regex Split, then
ByteLevel without its regex), trained the same way on a corpus of several
scripts: llama3/ with Llama-3's pattern (contractions case-insensitive,
digits in groups of up to three) and ignore_merges, Llama-3-style special
tokens and one normalized added token; qwen2/ with Qwen2's pattern (one
digit a piece) and its special tokens. Each directory holds tokenizer.json
and cases.json: the ids tokenizer.encode() gives for hard strings (several
scripts, digit runs, contractions, white space runs, newlines, punctuation,
emoji, special tokens inside text) and seeded random mixes; strings with
invalid UTF-8 are referenced from the parts as above (they carry no added
token).

Run:  tools/golden/.venv/bin/python tools/golden/make_tokenizer_golden.py
"""
import codecs
import json
import os
import random

import tokenizers
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, decoders, trainers

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


def reference_ids_parts(tok, data):
    """tokenizers' pre-tokenizer on the lossy text, its BPE model on each
    piece's original bytes."""
    text, lens = lossy(data)
    starts = [0]
    for n in lens:
        starts.append(starts[-1] + n)
    ids = []
    for _piece, (a, b) in tok.pre_tokenizer.pre_tokenize_str(text):
        raw = data[starts[a]:starts[b]]
        ids += [t.id for t in tok.model.tokenize("".join(BYTE_CHAR[x] for x in raw))]
    return ids


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


# The patterns as Llama-3's and Qwen2's tokenizer.json carry them
# (transformers' convert_slow_tokenizer.py, TikTokenConverter; its
# models/qwen2/tokenization_qwen2.py, PRETOKENIZE_REGEX).
LLAMA3_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
                  r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
QWEN2_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"""
                 r"""|\s*[\r\n]+|\s+(?!\S)|\s+""")
LLAMA3_SPECIALS = (["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"] +
                   [f"<|reserved_special_token_{i}|>" for i in range(12)])
LLAMA3_ADDED = ["benchctl"]  # an added token that is not special: matched after normalization
QWEN2_SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|box_start|>"]

SPLIT_CORPUS_LINES = CORPUS_LINES + [
    "Ελληνικά κείμενα, русский текст, עברית וערבית: العربية لغة جميلة.",
    "हिन्दी में लिखा गया वाक्य, ภาษาไทย ก็มี, and Tiếng Việt có dấu.",
    "Digits 1 12 123 1234 12345 123456 1234567 and ٣٤٥ and 3.14159265 and 1,000,000.",
    "IT'S LOUD, WE'RE HERE, THEY'VE GONE, I'M DONE, YOU'LL SEE, HE'D SAY; It's fine.",
    "code:\n\tif (x >= 10) {\n\t\treturn x * 2;\n\t}\r\n",
    "Emoji 😀😀 👍🏽 👨‍👩‍👧 🇫🇷 ✨ and symbols ©®™ ±×÷ →⇒ …",
    "spaces    and\ttabs\t\tand\n\n\nnewlines  \n  mixed",
    "U+180E is no white space: x \u180ex y \u180ey z \u180ez, nor U+200B: a \u200ba",
]

SPLIT_HARD = [
    "", " ", "  ", "   ", "\t", "\n", "\n\n", "\n\n\n", "\r\n", " \n ", "\n\n  \n", "  x", "x  ", "a  b", "a   b",
    "\t\tx", " \t \t", "x \n y", "a \n\nb", "a\r\nb", "  \n  x", "x\n", "!!\n\n", ".\r\n", "a\u2028b",
    "a\u0085b", "a\u180eb", "a \u180e b", "x\u180e  y", " \u180e\n", "\u180e \u180e", " \u180ex", "a \u180ez", "a \u0085 b", "a\x1cb", "a\u200bb", "a\u00a0 b", "\u3000x", " \u00a0\u00a0x",
    "Hello", "Hello, world! How are you?", "naïve café façade", "Ελληνικά Русский עברית العربية",
    "日本語のテキスト、中文文本。 한국어", "नमस्ते दुनिया", "ภาษาไทย", "Tiếng Việt", "e\u0301 a\u0308 \u0301x",
    "1", "12", "123", "1234", "12345", "1234567", "x2024y", " 2024", "3.14159", "1,000,000", "-42", "٣٤٥٦",
    "½ Ⅻ ² ①", "a1b22c333d4444",
    "it's", "IT'S", "We'Re", "they've", "I'M", "you'LL", "he'D", "'s", "''s", "'", "rock 'n' roll", "o'clock",
    "'S'T'RE'VE'M'LL'D", "x's", " 's", "don't", "DON'T",
    "!!!??? ...", " !!", "a--b", "(x)[y]{z}", "\"quoted\"", "#include <stdio.h>", "def f(x):\n\treturn x+1\n",
    "x  +\n\n  y", ";\n", " ;\r\n\r\n",
    "😀", " 👍🏽", "👨\u200d👩\u200d👧", "🇫🇷🇩🇪", "a😀b", "✨✨ ✨",
    "\ufeffbom", "\ufffd x",
]
LLAMA3_TEXT_SPECIALS = [
    "<|begin_of_text|>Hello", "a<|eot_id|>b", "<|start_header_id|>user<|end_header_id|>\n\nHi there<|eot_id|>",
    "<|reserved_special_token_1|><|reserved_special_token_10|><|reserved_special_token_11|>", "<|eot_id|",
    " <|eot_id|> ", "<|EOT_ID|>", "x<|eot_id|><|eot_id|>y", "<<|eot_id|>>", "run benchctl now", "benchctlbenchctl",
    "it's<|eot_id|>'s", "  <|begin_of_text|>  \n",
]
QWEN2_TEXT_SPECIALS = [
    "<|im_start|>system\nYou are helpful.<|im_end|>\n<|im_start|>user\n2+2?<|im_end|>", "x<|endoftext|>y",
    "<|im_start|", " <|im_end|> ", "<|IM_END|>", "<|endoftext|><|endoftext|>", "<<|box_start|>>",
]
# strings NFC changes (Qwen2's normalizer): combining marks that compose, singletons, Hangul jamo
NFC_HARD = ["e\u0301", "cafe\u0301 nai\u0308ve", "A\u030a \u212b \u2126", "\u1e9b\u0323", "\u1100\u1161\u11a8",
            "o\u0308\u0304", "\u0301e", "x\u0323\u0307y", "\ufb01 \u2460 \uff21", "e\u0301<|im_end|>e\u0301"]
SPLIT_INVALID = [b"\xff", b"abc\x80def", b"\xe2\x82abc", b" \xc3", b"\xed\xa0\x80x", b"ok \xff ok",
                 b"\xf0\x9f\x98 x", b"caf\xc3\xa9\xc3", b"\xc0\xafab", b"12\xf4\x90\x80\x8034", b"\n\xff\n"]


def train_split(corpus, pattern, specials, added, ignore_merges, nfc):
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges))
    if nfc:
        tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(tokenizers.Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=900, min_frequency=2, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train([corpus], trainer)
    if added:
        tok.add_tokens(added)
    return tok


def split_random_mixes(n, specials):
    rnd = random.Random(2323)
    alphabet = ALPHABET + ["\r\n", "\n\n", "  ", "1", "22", "333", "4444", "'S", "'Re", "ſ", "ا", "ב", "ก", "न",
                           "\u094d", "\u180e", "\u0085", "🇫", "✨", "…", "(", ")", ";"]
    out = []
    for _ in range(n):
        parts, invalid = [], rnd.random() < 0.15
        for _ in range(rnd.randint(1, 24)):
            r = rnd.random()
            if invalid and r < 0.08:
                parts.append(rnd.choice(INVALID))
            elif not invalid and r < 0.05:
                parts.append(rnd.choice(specials).encode("utf-8"))
            else:
                parts.append(rnd.choice(alphabet).encode("utf-8"))
        out.append(b"".join(parts))
    return out


def split_reference_ids(tok, data, added):
    """The case of data: its ids, and (with a normalizer that changes the
    text) what they decode to; None for invalid UTF-8 that the normalizer
    would change (the parts path below does not normalize)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        text = None
    norm = tok.normalizer.normalize_str if tok.normalizer else (lambda x: x)
    if text is not None:
        ids = tok.encode(text, add_special_tokens=False).ids
        decoded = tok.decode(ids, skip_special_tokens=False)
        assert decoded == norm(text), data
        if not any(a in text for a in added) and norm(text) == text:
            assert reference_ids_parts(tok, data) == ids, data
        case = {"hex": data.hex(), "ids": ids}
        if decoded != text:
            case["decoded_hex"] = decoded.encode("utf-8").hex()
        return case
    assert not any(a.encode("utf-8") in data for a in added), data
    lossy_text, _ = lossy(data)
    if norm(lossy_text) != lossy_text:
        return None
    return {"hex": data.hex(), "ids": reference_ids_parts(tok, data)}


def write_prompts(out, tok, texts, bos):
    """prompts.jsonl and prompts_ids.txt: what `benchctl prompts --bos BOS`
    must print (tests/e2e/prompts.sh); bos None: no BOS."""
    with open(os.path.join(out, "prompts.jsonl"), "w", encoding="utf-8") as f:
        for i, text in enumerate(texts):
            f.write(json.dumps({"id": i, "text": text}, ensure_ascii=False) + "\n")
    with open(os.path.join(out, "prompts_ids.txt"), "w") as f:
        for text in texts:
            ids = ([] if bos is None else [bos]) + tok.encode(text, add_special_tokens=False).ids
            f.write(" ".join(str(i) for i in ids) + "\n")


def make_split(name, pattern, specials, added, ignore_merges, text_specials, nfc=False):
    out = os.path.join(OUT, name)
    os.makedirs(out, exist_ok=True)
    corpus = os.path.join(out, "corpus.txt")
    rnd = random.Random(23)
    with open(corpus, "w", encoding="utf-8") as f:
        for _ in range(300):
            line = rnd.choice(SPLIT_CORPUS_LINES)
            words = line.split(" ")
            rnd.shuffle(words)
            f.write(" ".join(words) + "\n" + line + "\n")
    tok = train_split(corpus, pattern, specials, added, ignore_merges, nfc)
    tok.save(os.path.join(out, "tokenizer.json"), pretty=False)
    with open(os.path.join(out, "tokenizer.json"), encoding="utf-8") as f:
        spec = json.load(f)
    pre = spec["pre_tokenizer"]
    assert pre["type"] == "Sequence" and pre["pretokenizers"][0]["pattern"] == {"Regex": pattern}, pre
    strings = [s.encode("utf-8") for s in SPLIT_HARD + text_specials + (NFC_HARD if nfc else [])] + SPLIT_INVALID
    strings += split_random_mixes(300, specials + added)
    everything = specials + added
    cases, dropped = [], 0
    for d in strings:
        c = split_reference_ids(tok, d, everything)
        if c is None:
            dropped += 1
        else:
            cases.append(c)
    strings = [bytes.fromhex(c["hex"]) for c in cases]
    differ = 0
    if ignore_merges:  # how many cases ignore_merges decides (the model without it gives other ids)
        plain = Tokenizer.from_str(tok.to_str())
        plain.model = models.BPE(vocab=tok.get_vocab(with_added_tokens=False),
                                 merges=[tuple(m) for m in spec["model"]["merges"]], ignore_merges=False)
        differ = sum(1 for d, c in zip(strings, cases)
                     if d.decode("utf-8", "ignore") == d.decode("utf-8", "replace")
                     and plain.encode(d.decode("utf-8"), add_special_tokens=False).ids != c["ids"])
    with open(os.path.join(out, "cases.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizers_version": tokenizers.__version__, "pattern": pattern, "nfc": nfc,
                   "normalized_cases": sum(1 for c in cases if "decoded_hex" in c), "dropped_invalid_nfc": dropped,
                   "vocab_size": tok.get_vocab_size(), "n_merges": len(spec["model"]["merges"]),
                   "ignore_merges_decides": differ, "cases": cases}, f, indent=0)
    bos = tok.token_to_id("<|begin_of_text|>")  # Llama-3's BOS; Qwen2 has none
    prompts = [line for line in SPLIT_CORPUS_LINES if "\n" not in line] + text_specials[:3]
    write_prompts(out, tok, prompts, bos)
    print(f"{name}: dropped {dropped} invalid-UTF-8 strings NFC would change")
    print(f"{name}: {len(cases)} cases, vocab {tok.get_vocab_size()}, {len(spec['model']['merges'])} merges, "
          f"ignore_merges decides {differ} -> {out}")


def make_ignore_merges():
    """ignore_merges/: a hand-made vocabulary where it matters: "abc" is a
    token, but the merge b+c ranks before a+b, so BPE alone gives a, bc;
    with ignore_merges the piece "abc" is its token. Llama-3's split."""
    out = os.path.join(OUT, "ignore_merges")
    os.makedirs(out, exist_ok=True)
    vocab = {BYTE_CHAR[b]: i for i, b in enumerate(range(256))}
    for w in ["bc", "ab", "abc", "\u0120a", "\u0120abc"]:
        vocab[w] = len(vocab)
    merges = [("b", "c"), ("a", "b"), ("ab", "c"), ("\u0120", "a")]
    tok = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=True))
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(tokenizers.Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    tok.decoder = decoders.ByteLevel()
    tok.save(os.path.join(out, "tokenizer.json"), pretty=False)
    plain = Tokenizer(models.BPE(vocab=vocab, merges=merges, ignore_merges=False))
    plain.pre_tokenizer = tok.pre_tokenizer
    strings = ["abc", " abc", "abcabc", "xabc", "abc abc", "abcd", "bc"]
    cases = [{"hex": t.encode().hex(), "ids": tok.encode(t).ids} for t in strings]
    differ = sum(1 for t, c in zip(strings, cases) if plain.encode(t).ids != c["ids"])
    assert differ >= 3, differ
    with open(os.path.join(out, "cases.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizers_version": tokenizers.__version__, "vocab_size": tok.get_vocab_size(),
                   "n_merges": len(merges), "ignore_merges_decides": differ, "cases": cases}, f, indent=0)
    print(f"ignore_merges: {len(cases)} cases, {differ} decided by ignore_merges -> {out}")


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
    make_split("llama3", LLAMA3_PATTERN, LLAMA3_SPECIALS, LLAMA3_ADDED, True, LLAMA3_TEXT_SPECIALS)
    make_split("qwen2", QWEN2_PATTERN, QWEN2_SPECIALS, [], False, QWEN2_TEXT_SPECIALS, nfc=True)
    make_ignore_merges()


if __name__ == "__main__":
    main()
