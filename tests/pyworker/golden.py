"""golden.py: reads the golden fixtures tools/golden/make_golden.py writes
(tests/opt/golden/<model>/golden.bin; the format is in tools/golden/README.md)
with the standard library: magic "BCGOLDEN", u32 version, u32 count, then per
array u32 name length, name, u32 dtype (0 f32, 1 i32), u32 ndim, i64 shape[],
little-endian data. Returns {name: (shape, flat list)}."""

import struct

MAGIC = b"BCGOLDEN"


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != MAGIC:
        raise ValueError("%s: not a golden file" % path)
    version, count = struct.unpack_from("<II", data, 8)
    if version != 1:
        raise ValueError("%s: golden version %d, this reader knows 1" % (path, version))
    off, arrays = 16, {}
    for _ in range(count):
        (n,) = struct.unpack_from("<I", data, off)
        name = data[off + 4:off + 4 + n].decode()
        off += 4 + n
        code, ndim = struct.unpack_from("<II", data, off)
        off += 8
        shape = struct.unpack_from("<%dq" % ndim, data, off)
        off += 8 * ndim
        size = 1
        for d in shape:
            size *= d
        fmt = "<%d%s" % (size, "f" if code == 0 else "i")
        arrays[name] = (shape, list(struct.unpack_from(fmt, data, off)))
        off += 4 * size
    return arrays


def rows(arrays, name):
    """A 2-D array as a list of rows."""
    (b, t), flat = arrays[name]
    return [flat[i * t:(i + 1) * t] for i in range(b)]


def prompt_rows(arrays, case):
    """The case's prompts without their left padding."""
    return [[t for t, m in zip(ids, mask) if m] for ids, mask in
            zip(rows(arrays, case + ".input_ids"), rows(arrays, case + ".attention_mask"))]
