#!/usr/bin/python3
"""tools/make_safetensors_fixture.py — safetensors fixtures for tests/nn/test_checkpoint.cpp,
written by hand with struct + json (no safetensors package needed), laid out exactly like the
reference (Rust) serializer: u64 little-endian header length, compact JSON with "__metadata__"
first and each entry's keys in the order dtype, shape, data_offsets, padded with spaces to a
multiple of 8, then the raw little-endian data back to back.

  /usr/bin/python3 tools/make_safetensors_fixture.py
      writes tests/fixtures/safetensors/reference.safetensors (as other tools write it: no
      checksums; the C++ test reads it and checks the values) and reference_checksummed.safetensors
      (the same content with our writer's "tapegrad.crc32.<name>" metadata, zlib.crc32 of each
      tensor's bytes: the C++ test checks that save_safetensors writes these bytes).
  /usr/bin/python3 tools/make_safetensors_fixture.py --verify
      the reverse direction, run by hand (ctest cannot run Python): parses
      tests/fixtures/safetensors/written_by_tapegrad.safetensors, a file our C++ wrote (the C++
      test keeps it byte-identical to what save_safetensors writes today; TG_WRITE_FIXTURES=1
      rewrites it), checks the layout rules and every value; when the `safetensors` package is
      importable it also loads both files with it.
"""
import json
import math
import zlib
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "fixtures", "safetensors")

FMT = {"F32": ("f", 4), "F64": ("d", 8), "I64": ("q", 8), "BOOL": ("?", 1)}

# name -> (dtype, shape, values in C order)
REFERENCE = [
    ("weight", "F32", [2, 3], [0.5, -1.25, 3.0, 0.1, -0.0, 1e-3]),
    ("bias", "F64", [3], [1.0 / 3.0, -2.5, 1e300]),
    ("index", "I64", [2, 2], [0, -1, 2**40, -(2**62)]),
    ("mask", "BOOL", [5], [True, False, True, True, False]),
    ("scale", "F32", [], [2.0]),
    ("empty", "F64", [0, 4], []),
    ("after_empty", "I64", [1], [7]),
]
REFERENCE_META = {"format": "pt", "source": "make_safetensors_fixture.py"}

# What tests/nn/test_checkpoint.cpp writes into written_by_tapegrad.safetensors.
TAPEGRAD = [
    ("layers.0.weight", "F32", [3, 2], [0.25, -0.5, 1.5, 2.0, -3.0, 0.75]),
    ("layers.0.bias", "F32", [3], [0.125, 0.0, -1.0]),
    ("step", "I64", [], [42]),
    ("flags", "BOOL", [2, 2], [True, False, False, True]),
    ("table", "F64", [2, 2], [0.1, 0.2, 0.3, -1e-300]),
    ("nothing", "F32", [0], []),
]
TAPEGRAD_META = {"note": "written by tapegrad", "unicode": "h\u00e9llo \u2713"}


def pack(dtype, values):
    code, _ = FMT[dtype]
    return struct.pack("<%d%s" % (len(values), code), *values)


def serialize(tensors, metadata):
    header, blobs, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = metadata
    for name, dtype, shape, values in tensors:
        assert math.prod(shape) == len(values), name
        blob = pack(dtype, values)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        offset += len(blob)
        blobs.append(blob)
    text = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    text += b" " * ((8 - len(text) % 8) % 8)
    return struct.pack("<Q", len(text)) + text + b"".join(blobs)


def with_checksums(tensors, metadata):
    """metadata plus our writer's per-tensor CRC-32 keys, sorted by key as std::map orders them."""
    out = dict(metadata)
    for name, dtype, _, values in tensors:
        out["tapegrad.crc32." + name] = "%08x" % zlib.crc32(pack(dtype, values))
    return dict(sorted(out.items(), key=lambda kv: kv[0].encode("utf-8")))


def parse(data):
    """A strict reader: the rules of the reference implementation."""
    assert len(data) >= 8, "shorter than 8 bytes"
    (n,) = struct.unpack("<Q", data[:8])
    assert n <= 100_000_000 and 8 + n <= len(data), "bad header length %d" % n
    assert n % 8 == 0, "header not padded to a multiple of 8"

    def no_dups(pairs):
        keys = [k for k, _ in pairs]
        assert len(keys) == len(set(keys)), "duplicate keys %r" % keys
        return dict(pairs)

    header = json.loads(data[8 : 8 + n].decode("utf-8"), object_pairs_hook=no_dups)
    meta = header.pop("__metadata__", {})
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in meta.items())
    body = data[8 + n :]
    entries = sorted(header.items(), key=lambda kv: tuple(kv[1]["data_offsets"]))
    pos, out = 0, {}
    for name, e in entries:
        assert list(e) == ["dtype", "shape", "data_offsets"], (name, list(e))
        begin, end = e["data_offsets"]
        assert begin == pos, "%s: gap or overlap at %d (expected %d)" % (name, begin, pos)
        code, size = FMT[e["dtype"]]
        count = math.prod(e["shape"])
        assert end - begin == count * size, name
        out[name] = (e["dtype"], e["shape"], list(struct.unpack("<%d%s" % (count, code), body[begin:end])))
        pos = end
    assert pos == len(body), "trailing bytes"
    order = [name for name, _ in header.items()]
    return out, meta, order


def check(path, expected, expected_meta):
    with open(path, "rb") as f:
        data = f.read()
    got, meta, order = parse(data)
    assert meta == expected_meta, meta
    assert order == [t[0] for t in expected], order
    for name, dtype, shape, values in expected:
        gd, gs, gv = got[name]
        assert (gd, gs) == (dtype, shape), (name, gd, gs)
        assert pack(dtype, gv) == pack(dtype, values), (name, gv, values)
    # Our writer's layout is the reference layout: the same content serializes to the same bytes.
    assert data == serialize(expected, expected_meta), "bytes differ from the reference layout"
    try:
        from safetensors import safe_open  # optional; not installed on the build machines
    except ImportError:
        print("%s: ok (the safetensors package is not installed; hand-written reader only)" % path)
        return
    with safe_open(path, framework="numpy") as f:
        assert sorted(f.keys()) == sorted(t[0] for t in expected)
        assert f.metadata() == expected_meta
    print("%s: ok (also read by the safetensors package)" % path)


def main():
    os.makedirs(OUT, exist_ok=True)
    ref = os.path.join(OUT, "reference.safetensors")
    ref_crc = os.path.join(OUT, "reference_checksummed.safetensors")
    if "--verify" in sys.argv:
        check(ref, REFERENCE, REFERENCE_META)
        check(ref_crc, REFERENCE, with_checksums(REFERENCE, REFERENCE_META))
        check(os.path.join(OUT, "written_by_tapegrad.safetensors"), TAPEGRAD,
              with_checksums(TAPEGRAD, TAPEGRAD_META))
        return
    with open(ref, "wb") as f:
        f.write(serialize(REFERENCE, REFERENCE_META))
    check(ref, REFERENCE, REFERENCE_META)
    print("wrote", ref)
    with open(ref_crc, "wb") as f:
        f.write(serialize(REFERENCE, with_checksums(REFERENCE, REFERENCE_META)))
    check(ref_crc, REFERENCE, with_checksums(REFERENCE, REFERENCE_META))
    print("wrote", ref_crc)


if __name__ == "__main__":
    main()
