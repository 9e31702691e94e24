"""tools/make_half_fixtures_ops.py — PyTorch 1.13's results for the elementwise, reduction, scan,
shape and index families on bfloat16 and float16 inputs, as tests/fixtures/half_ops/<case>.safetensors
for tests/ops/test_half_{binary,reduce,shape}.cpp. Run with Debian's /usr/bin/python3 (torch 1.13):
    /usr/bin/python3 tools/make_half_fixtures_ops.py
Each case holds, per dtype t in (bf16, f16), the inputs x_t (and y_t) as float32 (exact: the
values the reduced type holds), the forward result out_t and, for differentiable cases, dout_t and
the gradients dx_t (dy_t), all float32. bf16: PyTorch's own bfloat16 kernels on the bf16 tensors.
f16: PyTorch 1.13 has no CPU float16 kernels, so its float32 result on the same (f16-held) values,
rounded once with .half(); so is bf16 where PyTorch's bf16 kernel rounds more than once (cumprod's
running product, embedding's repeated-row sum, var's and logsumexp's backward, a broadcast mul's gradient; metadata bf16_reference says which). The fixture format has no 16-bit types; nothing else is stored.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(__file__))
import fixture_io  # noqa: E402

ROOT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures", "half_ops")
N = 1029  # past the 1024-element chunk and every vector width, with a tail
# 0, -0, ±inf, NaN, bfloat16 subnormals (below 2^-126), float16 subnormals (below 2^-14), the
# float16 overflow edge and a bfloat16 rounding tie, then normals.
SPECIAL = [0.0, -0.0, float("inf"), float("-inf"), float("nan"), 2.0**-130, -(2.0**-133),
           2.0**-20, -(2.0**-24), 65504.0, 1.0 + 2.0**-8, 3.0]
TYPES = {"bf16": torch.bfloat16, "f16": torch.float16}


def inputs(gen, shape, special):
    x = torch.randn(shape, generator=gen) * 3
    if special:
        flat = x.view(-1)
        flat[: len(SPECIAL)] = torch.tensor(SPECIAL)
    return x


def run(fn, xs, dt, ref32):
    """fn on leaves of dtype dt (bf16: PyTorch's kernels) or on float32 leaves, to be rounded once
    (f16, and bf16 where ref32: PyTorch's bf16 kernel rounds more than once). Returns out, the
    leaves and whether the result is PyTorch's own bf16."""
    held = [x.to(dt) for x in xs]
    if dt == torch.bfloat16 and not ref32:
        leaves = [h.clone().requires_grad_() for h in held]
        return fn(*leaves), leaves, True
    leaves = [h.float().requires_grad_() for h in held]
    return fn(*leaves), leaves, False


def case(name, fn, shapes, grad=True, special=True, seed=0, ref32=False, prep=None):
    gen = torch.Generator().manual_seed(seed)
    xs = [inputs(gen, s, special) for s in shapes]
    if prep:  # the inputs' float32 values before rounding (pow: a positive base)
        xs = prep(*xs)
    tensors = {}
    for tag, dt in TYPES.items():
        out, leaves, native = run(fn, xs, dt, ref32)
        for k, leaf in enumerate(leaves):
            tensors[f"x{k}_{tag}"] = leaf.detach().float()
        outs = out if isinstance(out, tuple) else (out,)
        o = outs[0]
        rounded = o.detach() if native or not o.is_floating_point() else o.detach().to(dt)
        tensors[f"out_{tag}"] = rounded.float() if o.is_floating_point() else rounded
        if grad and o.is_floating_point():
            dout = torch.randn(o.shape, generator=gen).to(dt)
            g = dout if native else dout.float()
            grads = torch.autograd.grad(o, leaves, g, allow_unused=True)
            tensors[f"dout_{tag}"] = dout.float()
            for k, gk in enumerate(grads):
                if gk is not None:
                    gk = gk if native else gk.to(dt)
                    tensors[f"dx{k}_{tag}"] = gk.float()
    meta = {"shapes": str(shapes), "bf16_reference": "float32 rounded once" if ref32 else "bf16"}
    fixture_io.write(os.path.join(ROOT, name + ".safetensors"), tensors, meta)


def main():
    torch.manual_seed(0)
    flat, bc = [(N,)], [(7, 1, 33), (5, 33)]
    # binary, with special values and a broadcast
    case("add", torch.add, flat + flat)
    case("sub", torch.sub, flat + flat)
    case("mul", torch.mul, flat + flat)
    case("div", torch.div, flat + flat)
    case("maximum", torch.maximum, flat + flat)
    case("minimum", torch.minimum, flat + flat)
    case("add_bcast", torch.add, bc, special=False)
    # PyTorch's bf16 rounds each product before summing it to the broadcast operand's shape
    case("mul_bcast", torch.mul, bc, special=False, ref32=True)
    case("pow", torch.pow, flat + flat, special=False, prep=lambda a, b: [a.abs() + 0.5, b * 0.25])
    case("lt", torch.lt, flat + flat, grad=False)
    case("where", lambda a, b: torch.where(a > 0, a, b), bc, special=False)
    # reductions
    case("sum", lambda x: x.sum(), flat)
    case("sum_dim", lambda x: x.sum(1), [(3, 130, 5)], special=False)
    case("mean_dim", lambda x: x.mean(-1), [(3, 1030)], special=False)
    case("amax_dim", lambda x: x.amax(0), [(33, 40)], special=False)
    # forward only: at a NaN maximum PyTorch sends the gradient to the NaN, ours (float32 too) not
    case("max", lambda x: x.max(), flat, grad=False)
    # PyTorch's bf16 var backward subtracts a bf16-rounded mean: float32 reference
    case("var_dim", lambda x: x.var(1), [(3, 130, 5)], special=False, ref32=True)
    # PyTorch's bf16 logsumexp backward reads its bf16-rounded result: float32 reference
    case("logsumexp", lambda x: torch.logsumexp(x, 1), [(9, 130)], special=False, ref32=True)
    case("cumsum", lambda x: torch.cumsum(x, 1), [(5, 300)], special=False)
    # PyTorch's bf16 cumprod rounds the running product to bf16 at every step: float32 reference
    case("cumprod", lambda x: torch.cumprod(x, 1), [(5, 14)], special=False, ref32=True)
    # shape and index (data movement: exact)
    case("cat", lambda a, b: torch.cat([a, b], 0), [(3, 17), (4, 17)])
    case("flip_t", lambda x: x.flip(0).t().contiguous(), [(11, 17)])
    case("gather", lambda x: torch.gather(x, 1, torch.tensor([[0, 2, 2], [1, 1, 0]])), [(2, 3)],
         special=False)
    # PyTorch's bf16 embedding backward rounds the running sum of a repeated row at each repeat
    case("embedding", lambda w: torch.nn.functional.embedding(
        torch.tensor([[0, 3, 3], [4, 0, 3]]), w), [(5, 300)], special=False, ref32=True)
    # stable: ties (many among bf16 values) keep index order, as ours
    case("sort", lambda x: torch.sort(x, stable=True, dim=1, descending=True)[0], [(4, 300)],
         special=False)


if __name__ == "__main__":
    main()
