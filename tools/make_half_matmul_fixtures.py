"""tools/make_half_matmul_fixtures.py — PyTorch 1.13's bfloat16 matmul, bmm and linear (forward and
backward) and the float32 references for float16, as tests/fixtures/half_matmul/<case>.safetensors
for tests/ops/test_half_matmul.cpp. Run with Debian's /usr/bin/python3 (torch 1.13):
    /usr/bin/python3 tools/make_half_matmul_fixtures.py
The format has no 16-bit dtypes: every tensor is stored as float32 (bfloat16 and float16 values
are exact there). Per case:
  inputs (a, b / x, w, bias) and dout, already representable in the case's dtype;
  once_*   the float64 product of those values (and gradients), rounded once to the dtype
           (PyTorch's float32 result .half() / .bfloat16(), without float32's own rounding);
  torch_*  (bfloat16 only) PyTorch 1.13's own bfloat16 results, which accumulate in bfloat16
           where m·n·k <= 4096 (the "small" cases) and in float32 above.
metadata: op, dtype, index (every case).
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import fixture_io  # noqa: E402

FAMILY = "half_matmul"
DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def representable(g, shape, dt, scale=1.0):
    return (torch.randn(shape, generator=g, dtype=torch.float64) * scale).to(dt).to(torch.float64)


def run(op, args, dt, g):
    """Forward and backward of op on float64 leaves (once_*) and, for bfloat16, on dt leaves
    (torch_*)."""
    leaves64 = [a.clone().requires_grad_() for a in args]
    out64 = op(*leaves64)
    dout = representable(g, out64.shape, dt)
    grads64 = torch.autograd.grad(out64, leaves64, dout)
    once = [out64.detach()] + list(grads64)
    once = [t.to(dt).to(torch.float32) for t in once]
    theirs = None
    if dt == torch.bfloat16:
        leaves = [a.to(dt).requires_grad_() for a in args]
        out = op(*leaves)
        grads = torch.autograd.grad(out, leaves, dout.to(dt))
        theirs = [t.to(torch.float32) for t in [out.detach()] + list(grads)]
    return dout, once, theirs


def cases():
    # name, op, input shapes (the last of a linear is its bias)
    yield "mm_small", "matmul", [(4, 8), (8, 6)]            # m·n·k 192: PyTorch sums in bf16
    yield "mm", "matmul", [(33, 70), (70, 41)]              # odd sizes: every tail
    yield "vec", "matmul", [(70,), (70, 9)]                  # 1-D lhs
    yield "bmm", "bmm", [(3, 17, 40), (3, 40, 23)]
    yield "bcast", "matmul", [(2, 1, 9, 40), (3, 40, 12)]    # both operands broadcast
    yield "linear", "linear", [(4, 10, 64), (48, 64), (48,)]
    yield "linear_small", "linear", [(2, 3, 8), (5, 8), (5,)]


OPS = {"matmul": torch.matmul, "bmm": torch.bmm, "linear": torch.nn.functional.linear}


def main():
    root = fixture_io.out_root()
    names = [f"{n}_{d}" for n, _, _ in cases() for d in DTYPES]
    for di, (dname, dt) in enumerate(DTYPES.items()):
        for ci, (name, op, shapes) in enumerate(cases()):
            g = torch.Generator().manual_seed(1000 * di + ci)
            args = [representable(g, s, dt) for s in shapes]
            dout, once, theirs = run(OPS[op], args, dt, g)
            arg_names = ["x", "w", "bias"] if op == "linear" else ["a", "b"]
            tensors = {n: a.to(torch.float32) for n, a in zip(arg_names, args)}
            tensors["dout"] = dout.to(torch.float32)
            for i, n in enumerate(["out"] + ["d" + a for a in arg_names]):
                tensors["once_" + n] = once[i]
                if theirs is not None:
                    tensors["torch_" + n] = theirs[i]
            meta = {"op": op, "dtype": dname, "index": ",".join(names)}
            fixture_io.write(fixture_io.case_path(root, FAMILY, f"{name}_{dname}"), tensors, meta)
    print(f"wrote {len(names)} cases to tests/fixtures/{FAMILY}")


if __name__ == "__main__":
    torch.manual_seed(0)
    main()
