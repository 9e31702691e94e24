"""tools/make_half_fixtures.py — PyTorch 1.13's float32 <-> bfloat16 / float16 conversions on the
values that matter (every special value, rounding ties, subnormals of all three formats, the
overflow edges, random bit patterns), as tests/fixtures/half/convert.safetensors for
tests/autograd/test_half.cpp. Run with Debian's /usr/bin/python3 (torch 1.13):
    /usr/bin/python3 tools/make_half_fixtures.py [--out DIR]
Bits are stored as int64 (the fixture format has no 16-bit integers); NaNs are compared as NaN.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
import fixture_io  # noqa: E402


def forward_inputs(rng):
    b = []
    special = [0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001,
               0x7FBFFFFF, 0xFF812345, 0x7FFFFFFF, 0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF,
               0x00800000, 0x7F7FFFFF, 0xFF7FFFFF, 0x7F7F7FFF, 0x7F7F8000, 0x3F800000]
    b += special
    for hi in [0x3F80, 0x3F81, 0x0001, 0x007F, 0x0080, 0x7F7E, 0x7F7F, 0xBF80, 0xBF81, 0x8001]:
        b += [(hi << 16) | lo for lo in (0x7FFF, 0x8000, 0x8001, 0xFFFF, 0x0001)]  # bf16 ties
    for e in range(0, 256):  # every float32 exponent, a few mantissas
        for m in (0, 1, 0x1000, 0x7FFFFF, 0x18000):
            b += [(e << 23) | m, 0x80000000 | (e << 23) | m]
    # float16's edges: max, the overflow tie, the smallest normal and subnormals, their ties.
    for v in [65504.0, 65519.996, 65520.0, 65536.0, 2.0**-14, 2.0**-24, 2.0**-25, 3 * 2.0**-25,
              2.0**-25 * 1.0000001, 5 * 2.0**-26, 1023 * 2.0**-24, 1023.5 * 2.0**-24, 6.1e-5]:
        b += [int(np.array([v], np.float32).view(np.uint32)[0]),
              int(np.array([-v], np.float32).view(np.uint32)[0])]
    for k in range(0, 2048, 29):  # float16 subnormal ties: (k + 1/2) * 2^-24
        b.append(int(np.array([(k + 0.5) * 2.0**-24], np.float32).view(np.uint32)[0]))
    b += list(rng.integers(0, 2**32, size=500, dtype=np.uint64))
    normal = (rng.standard_normal(400) * np.exp(rng.uniform(-20, 12, 400))).astype(np.float32)
    b += list(normal.view(np.uint32).astype(np.uint64))
    return np.array(b, dtype=np.uint64).astype(np.uint32)


def backward_inputs():
    h = list(range(0, 0x0400, 3)) + list(range(0x8000, 0x8400, 5))  # zeros, f16 subnormals
    for e in range(1, 32):
        for m in (0, 1, 0x155, 0x200, 0x3FF):
            h += [(e << 10) | m, 0x8000 | (e << 10) | m]
    for hi in range(0, 0x10000, 251):
        h.append(hi)
    h += [0x7C00, 0xFC00, 0x7E00, 0x7C01, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0x0001, 0x007F, 0x8080]
    return np.array(sorted(set(h)), dtype=np.uint16)


def main():
    rng = np.random.default_rng(20261206)
    bits = forward_inputs(rng)
    x = torch.from_numpy(bits.view(np.float32).copy())
    bf = x.to(torch.bfloat16).view(torch.int16).numpy().view(np.uint16).astype(np.int64)
    hf = x.half().view(torch.int16).numpy().view(np.uint16).astype(np.int64)
    h = backward_inputs()
    ht = torch.from_numpy(h.view(np.int16).copy())
    from_f16 = ht.view(torch.float16).float()
    from_bf16 = ht.view(torch.bfloat16).float()
    out = fixture_io.out_root()
    tensors = {"x": x, "bf16_bits": torch.from_numpy(bf), "f16_bits": torch.from_numpy(hf),
               "h_bits": torch.from_numpy(h.astype(np.int64)), "from_f16": from_f16,
               "from_bf16": from_bf16}
    meta = {"index": "convert", "torch": torch.__version__,
            "what": "x (float32) -> x.to(torch.bfloat16) / x.half() bits; h_bits as float16 / "
                    "bfloat16 -> .float()"}
    fixture_io.write(fixture_io.case_path(out, "half", "convert"), tensors, meta)
    print(f"half/convert: {len(bits)} float32 values, {len(h)} 16-bit patterns")


if __name__ == "__main__":
    main()
