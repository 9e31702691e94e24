#!/usr/bin/python3
"""tools/make_fixtures.py — PyTorch reference values for tests/ops/test_parity.cpp (and the matmul
parity test), written as small float64 .npy files into tests/fixtures/.

Run with Debian's torch (1.13, CPU):  /usr/bin/python3 tools/make_fixtures.py
Every case <name> writes:
  <name>_<input>.npy    each input (float64; int64 for targets)
  <name>_out.npy        the op's output
  <name>_dout.npy       the fixed upstream gradient fed to backward (same shape as out)
  <name>_d<input>.npy   the gradient of each differentiable input
Seeds are fixed, so rerunning reproduces the files byte for byte.
"""
import os

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "fixtures")


def save(name, arr):
    arr = arr.detach().numpy() if isinstance(arr, torch.Tensor) else arr
    np.save(os.path.join(OUT, name + ".npy"), np.array(arr, order="C"))  # keeps 0-dim shapes


def case(name, fn, inputs, seed):
    """inputs: list of (arg name, tensor); float tensors get gradients."""
    g = torch.Generator().manual_seed(seed)
    leaves = []
    for arg, t in inputs:
        if t.is_floating_point():
            t = t.clone().requires_grad_()
        leaves.append(t)
        save(f"{name}_{arg}", t)
    out = fn(*leaves)
    dout = torch.randn(out.shape, generator=g, dtype=torch.float64)
    diff = [t for t in leaves if t.requires_grad]
    grads = torch.autograd.grad(out, diff, dout)
    save(f"{name}_out", out)
    save(f"{name}_dout", dout)
    gi = iter(grads)
    for (arg, _), t in zip(inputs, leaves):
        if t.requires_grad:
            save(f"{name}_d{arg}", next(gi))


def randn(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def main():
    os.makedirs(OUT, exist_ok=True)
    torch.manual_seed(0)

    # softmax / log_softmax
    case("softmax_dim1", lambda x: F.softmax(x, 1), [("x", randn(3, 5, seed=1))], 101)
    case("softmax_dim0", lambda x: F.softmax(x, 0), [("x", randn(4, 2, 3, seed=2))], 102)
    case("log_softmax_dimm1", lambda x: F.log_softmax(x, -1), [("x", randn(2, 3, 6, seed=3))], 103)
    case("log_softmax_dim1", lambda x: F.log_softmax(x, 1), [("x", randn(2, 4, 3, seed=4))], 104)

    # layer_norm with weight and bias, over 1 and 2 trailing dims
    case("layer_norm_1d", lambda x, w, b: F.layer_norm(x, (6,), w, b, 1e-5),
         [("x", randn(2, 3, 6, seed=5) * 2 + 1), ("w", randn(6, seed=6)), ("b", randn(6, seed=7))], 105)
    case("layer_norm_2d", lambda x, w, b: F.layer_norm(x, (3, 4), w, b, 1e-5),
         [("x", randn(2, 3, 4, seed=8)), ("w", randn(3, 4, seed=9)), ("b", randn(3, 4, seed=10))], 106)

    # gelu
    case("gelu_none", lambda x: F.gelu(x), [("x", randn(4, 5, seed=11) * 2)], 107)
    case("gelu_tanh", lambda x: F.gelu(x, approximate="tanh"), [("x", randn(4, 5, seed=12) * 2)], 108)

    # cross_entropy
    logits = randn(6, 5, seed=13) * 2
    tgt = torch.tensor([1, 0, 4, 2, 2, 3])
    tgt_ign = torch.tensor([1, -100, 4, 2, -100, 3])
    for red in ("mean", "sum", "none"):
        case(f"ce_{red}", lambda x, t, red=red: F.cross_entropy(x, t, reduction=red),
             [("x", logits), ("t", tgt)], 109)
    case("ce_ignore", lambda x, t: F.cross_entropy(x, t, ignore_index=-100), [("x", logits), ("t", tgt_ign)], 110)
    case("ce_smooth", lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1), [("x", logits), ("t", tgt)], 111)
    case("ce_smooth_ignore_none",
         lambda x, t: F.cross_entropy(x, t, ignore_index=-100, label_smoothing=0.2, reduction="none"),
         [("x", logits), ("t", tgt_ign)], 112)
    case("ce_smooth_ignore_mean",
         lambda x, t: F.cross_entropy(x, t, ignore_index=2, label_smoothing=0.3),
         [("x", logits), ("t", tgt)], 113)
    tgt_ncd = torch.tensor([[0, 3, 1], [2, -100, 3]])
    case("ce_ncd", lambda x, t: F.cross_entropy(x, t, label_smoothing=0.05),
         [("x", randn(2, 4, 3, seed=14)), ("t", tgt_ncd)], 114)
    case("ce_ncd_none", lambda x, t: F.cross_entropy(x, t, reduction="none"),
         [("x", randn(2, 4, 3, seed=14)), ("t", tgt_ncd)], 115)

    # broadcasting matmul (the test lives with the matmul family)
    case("matmul_4d3d", torch.matmul, [("a", randn(2, 1, 3, 4, seed=15)), ("b", randn(5, 4, 6, seed=16))], 116)
    case("matmul_1d3d", torch.matmul, [("a", randn(4, seed=17)), ("b", randn(2, 4, 3, seed=18))], 117)

    total = sum(os.path.getsize(os.path.join(OUT, f)) for f in os.listdir(OUT) if f.endswith(".npy"))
    print(f"wrote {len(os.listdir(OUT))} files, {total} bytes, into {os.path.normpath(OUT)}")


if __name__ == "__main__":
    main()
