#!/usr/bin/env python3
"""make_ptbin_corpus.py: writes the seed corpus of fuzz_ptbin
(tests/fuzz/corpus/ptbin/): small torch-style zip checkpoints, valid (STORED,
DEFLATE, ZIP64, F16/BF16, a shared storage) and refused (a forbidden GLOBAL,
an out-of-range offset, a non-contiguous stride, a missing storage). Plain
Python (zipfile, struct), no torch.
Usage: python3 tests/fuzz/make_ptbin_corpus.py"""
import io
import os
import struct
import zipfile

from make_corpus import write_seeds  # the safetensors seeds' writer, same folder

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "corpus", "ptbin")


def ustr(s):
    b = s.encode()
    return b"X" + struct.pack("<I", len(b)) + b


def tensor(key, stype, numel, off, shape, stride):
    p = b"ctorch._utils\n_rebuild_tensor_v2\n(("
    p += ustr("storage") + b"ctorch\n" + stype.encode() + b"\n" + ustr(key) + ustr("cpu")
    p += b"J" + struct.pack("<i", numel) + b"tQ" + b"J" + struct.pack("<i", off)
    p += b"(" + b"".join(b"J" + struct.pack("<i", d) for d in shape) + b"t"
    p += b"(" + b"".join(b"J" + struct.pack("<i", d) for d in stride) + b"t"
    p += b"\x89ccollections\nOrderedDict\n)RtR"
    return p


def state_dict(items, ordered=True):
    p = b"\x80\x02" + (b"ccollections\nOrderedDict\n)R" if ordered else b"}") + b"q\x00("
    for name, t in items:
        p += ustr(name) + t
    return p + b"u."


def zipped(pkl, storages, method=zipfile.ZIP_STORED, force_zip64=False):
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=method) as z:
        z.writestr("archive/data.pkl", pkl)
        z.writestr("archive/byteorder", "little")
        for k, v in storages.items():
            with z.open("archive/data/" + k, "w", force_zip64=force_zip64) as f:
                f.write(v)
    return buf.getvalue()


F32 = bytes(range(32))
GOOD = state_dict([("model.decoder.embed_tokens.weight", tensor("0", "FloatStorage", 8, 0, [2, 4], [4, 1])),
                   ("lm_head.weight", tensor("0", "FloatStorage", 8, 0, [2, 4], [4, 1])),
                   ("b", tensor("1", "HalfStorage", 3, 1, [2], [1])),
                   ("c", tensor("2", "BFloat16Storage", 2, 0, [1, 2], [2, 1]))])
STOR = {"0": F32, "1": bytes(6), "2": bytes(4)}

SEEDS = {
    "valid_stored": zipped(GOOD, STOR),
    "valid_deflate": zipped(GOOD, STOR, zipfile.ZIP_DEFLATED),
    "valid_zip64": zipped(GOOD, STOR, force_zip64=True),
    "valid_plain_dict": zipped(state_dict([("w", tensor("0", "FloatStorage", 8, 2, [3], [1]))], False), STOR),
    "bad_global": zipped(b"\x80\x02cos\nsystem\n" + ustr("ls") + b"\x85R.", STOR),
    "bad_offset": zipped(state_dict([("w", tensor("0", "FloatStorage", 8, 7, [2], [1]))]), STOR),
    "bad_stride": zipped(state_dict([("w", tensor("0", "FloatStorage", 8, 0, [2, 4], [1, 2]))]), STOR),
    "bad_missing_storage": zipped(state_dict([("w", tensor("9", "FloatStorage", 8, 0, [8], [1]))]), STOR),
    "bad_double_storage": zipped(state_dict([("w", tensor("0", "DoubleStorage", 4, 0, [4], [1]))]), STOR),
}


def main():
    write_seeds(OUT, SEEDS)


if __name__ == "__main__":
    main()
