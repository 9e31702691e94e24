"""tools/fixture_io.py — the one writer (and reader) of the PyTorch reference fixtures: every case
of every family is one tests/fixtures/<family>/<case>.safetensors, read by tests/fixtures.hpp.

The make_*fixtures*.py generators import it (run with Debian's /usr/bin/python3, torch 1.13):
    fixture_io.write(fixture_io.case_path(out, "softmax", "dim1"), {"x": x, "out": out, ...},
                     {"key": "value"})
The format is Hugging Face's safetensors, written here with struct + json (not the safetensors
package): u64 little-endian header length N | N bytes of JSON, padded with spaces to a multiple of
8 | the raw little-endian data. The header holds "__metadata__" first (the case's configuration as
a str -> str map; left out when empty), then one entry {"dtype", "shape", "data_offsets"} per
tensor. Tensors are sorted by name and packed back to back in that order, and metadata keeps the
order it is given in, so a rerun writes the same bytes. dtypes are kept as given: float64 -> F64,
float32 -> F32, int64 -> I64, bool -> BOOL (anything else is refused); 0-dim tensors have shape [].
Not here: the tapegrad.crc32.* checksums tapegrad's own writer adds (the reader accepts files
without them), and other dtypes.
"""
import json
import os
import struct

import numpy as np

DTYPES = {np.dtype("<f8"): "F64", np.dtype("<f4"): "F32", np.dtype("<i8"): "I64", np.dtype("|b1"): "BOOL"}
NUMPY = {v: k for k, v in DTYPES.items()}


def leaves(inputs, tensors=None):
    """inputs: (arg name, tensor) pairs. Floating tensors become fresh leaves that require grad.
    Returns the leaves in order and the {name: tensor} map the case stores (tensors extends it)."""
    tensors = dict(tensors or {})
    out = []
    for arg, t in inputs:
        if t.is_floating_point():
            t = t.clone().requires_grad_()
        out.append(t)
        tensors[arg] = t
    return out, tensors


def add_grads(tensors, inputs, leaf_list, out, generator):
    """For a floating out and some leaf that requires grad: tensors["dout"] (float64 normal draws
    from generator) and tensors["d<arg>"] = d(out·dout)/d<arg> for each such leaf."""
    import torch

    diff = [t for t in leaf_list if t.requires_grad]
    if not (out.is_floating_point() and diff):
        return
    dout = torch.randn(out.shape, generator=generator, dtype=torch.float64)
    grads = iter(torch.autograd.grad(out, diff, dout, allow_unused=True))
    tensors["dout"] = dout
    for (arg, _), t in zip(inputs, leaf_list):
        if t.requires_grad:
            tensors[f"d{arg}"] = next(grads)


def out_root():
    """The fixture root a generator writes under: --out DIR on its command line (check_fixtures.py
    passes a scratch directory), else the repository's tests/fixtures."""
    import sys
    args = sys.argv[1:]
    if "--out" in args and args.index("--out") + 1 < len(args):
        return args[args.index("--out") + 1]
    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures")


def case_path(root, family, case):
    """root/family/case.safetensors (root is tests/fixtures or a scratch directory)."""
    return os.path.join(root, family, case + ".safetensors")


def to_numpy(t):
    """A torch tensor (detached, on the CPU) or anything np.asarray takes, as a C-order array."""
    if hasattr(t, "detach"):
        t = t.detach().cpu().numpy()
    a = np.asarray(t)
    if not a.dtype.isnative:  # data is little endian on disk; this host is too
        a = a.astype(a.dtype.newbyteorder("="))
    return a if a.flags.c_contiguous else a.copy(order="C")  # (ascontiguousarray makes 0-dim 1-dim)


def encode(tensors, metadata=None):
    """The file's bytes. tensors: {name: array or tensor}; metadata: {str: str-able}."""
    header, blobs, off = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name in sorted(tensors):
        if name == "__metadata__":
            raise ValueError('"__metadata__" is reserved, not a tensor name')
        a = to_numpy(tensors[name])
        if a.dtype not in DTYPES:
            raise TypeError(f"{name}: dtype {a.dtype} is not one of {sorted(DTYPES.values())}")
        data = a.tobytes()
        header[name] = {"dtype": DTYPES[a.dtype], "shape": list(a.shape),
                        "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    h = json.dumps(header, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)  # the data starts 8-aligned, as the format recommends
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def write(path, tensors, metadata=None):
    """Writes one case file, creating its family directory."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(encode(tensors, metadata))


def read(path):
    """(tensors {name: np.ndarray}, metadata {str: str}) of a file written by encode."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    tensors = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        tensors[name] = np.frombuffer(data[b:end], dtype=NUMPY[e["dtype"]]).reshape(tuple(e["shape"]))
    return tensors, meta
