#!/usr/bin/python3
"""tools/make_reduce_fixtures.py — PyTorch reference values for issue 40's corners of the
reductions, softmin, the losses and einsum (tests/ops/test_reduce.cpp, test_scan.cpp,
test_softmax.cpp, test_losses.cpp, test_einsum.cpp): one file per case,
tests/fixtures/<family>/<case>.safetensors (through tools/fixture_io.py), families
  reduce      std / std_mean at a zero deviation, var with correction > n, sum / prod of int64
              and bool, cumprod of int64 (wrapping modulo 2^64)
  softmin     softmin along several dims
  loss_corner kl_div at zero, negative, NaN and infinite targets; cosine_similarity broadcast
              along its dim and on 0-dim inputs; normalize on 0-dim inputs
  einsum_int  einsum on int64 and bool operands

Run with Debian's torch (1.13, CPU):  /usr/bin/python3 tools/make_reduce_fixtures.py [--out DIR]
Every case file holds the tensors
  <input>      each input (float64; int64 or bool for integer inputs)
  out          the op's output
  dout         float outputs only: the fixed upstream gradient fed to backward
  d<input>     the gradient of each float input (NaN and ±inf kept: compare them as equal)
Seeds are fixed, so rerunning reproduces the files byte for byte.
"""
import argparse
import os
import shutil

import torch
import torch.nn.functional as F

import fixture_io

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, "..", "tests", "fixtures"))
FAMILIES = ["reduce", "softmin", "loss_corner", "einsum_int"]
nan, inf = float("nan"), float("inf")


def case(family, name, fn, inputs, seed):
    """inputs: list of (arg name, tensor); float tensors get gradients."""
    g = torch.Generator().manual_seed(seed)
    leaves, tensors = fixture_io.leaves(inputs)
    out = fn(*leaves)
    tensors["out"] = out
    fixture_io.add_grads(tensors, inputs, leaves, out, g)
    fixture_io.write(fixture_io.case_path(OUT, family, name), tensors)


def randn(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def randint(lo, hi, *shape, seed):
    return torch.randint(lo, hi, shape, generator=torch.Generator().manual_seed(seed))


def reduce_cases():
    # std: a constant row (gradient 0, not NaN), rows of one element with correction 0, NaN and
    # ±inf rows; std_mean's std is the same op
    xc = randn(4, 3, seed=1)
    xc[0] = 1.5
    xc[2, 1] = nan
    xc[3] = torch.tensor([-inf, inf, 0.0])
    case("reduce", "std_dim1_const_row", lambda x: torch.std(x, 1), [("x", xc)], 301)
    case("reduce", "std_c0_one_element", lambda x: torch.std(x, 1, unbiased=False),
         [("x", randn(3, 1, seed=2))], 302)
    case("reduce", "std_c1_one_element", lambda x: torch.std(x, 0), [("x", randn(1, 3, seed=3))], 303)
    xk = randn(2, 3, 4, seed=4)
    xk[1, :, 2] = -0.25
    case("reduce", "std_mean_dims02_keepdim",
         lambda x: torch.std_mean(x, (0, 2), keepdim=True)[0] * 2 + torch.std_mean(x, (1,))[1].sum(),
         [("x", xk)], 304)
    # var with correction > n: the value divides by max(0, n − c), the gradient by n − c
    case("reduce", "var_correction_over_n", lambda x: torch.var(x, 1, correction=3),
         [("x", randn(3, 2, seed=5))], 305)
    # logsumexp over empty dims: −inf, an empty gradient
    case("reduce", "logsumexp_empty_dim0", lambda x: torch.logsumexp(x, 0), [("x", torch.zeros(0, 3))], 306)
    # integer sums and products: bool counts, int64 products wrap modulo 2^64
    xb = randint(0, 2, 3, 4, seed=6).bool()
    xb[1] = True
    case("reduce", "sum_bool_dim1", lambda x: torch.sum(x, 1), [("x", xb)], 307)
    case("reduce", "prod_bool_dim1", lambda x: torch.prod(x, 1), [("x", xb)], 308)
    case("reduce", "prod_bool_all", lambda x: torch.prod(x), [("x", xb[1])], 309)
    xi = randint(-9, 9, 3, 4, seed=7)
    case("reduce", "prod_int64_dim0_keepdim", lambda x: torch.prod(x, 0, keepdim=True), [("x", xi)], 310)
    xw = torch.tensor([[2**40, 2**40, 3], [-3, 2**62, 1], [7, -1, 5]])
    case("reduce", "prod_int64_wraps", lambda x: torch.prod(x, 1), [("x", xw)], 311)
    case("reduce", "cumprod_int64_wraps", lambda x: torch.cumprod(x, 1), [("x", xw)], 312)
    case("reduce", "cumprod_bool", lambda x: torch.cumprod(x, 0), [("x", xb)], 313)


def softmin_cases():
    case("softmin", "dim1", lambda x: F.softmin(x, 1), [("x", randn(3, 5, seed=11))], 321)
    case("softmin", "dim0_3d", lambda x: F.softmin(x, 0), [("x", randn(4, 2, 3, seed=12))], 322)
    xs = randn(2, 4, seed=13) * 30
    xs[1, 2] = inf  # exp(−inf) = 0: the row still sums to 1
    case("softmin", "dimm1_large", lambda x: F.softmin(x, -1), [("x", xs)], 323)


def loss_cases():
    # kl_div (reduction none): xlogy(t, t) − t·x: 0 at t = 0 unless x is ±inf, NaN for t < 0 or NaN
    t = torch.tensor([0.0, -0.0, -1.0, nan, 0.5, 2.0, 0.0, 0.0, 0.3])
    x = torch.tensor([-1.0, -1.0, -1.0, -1.0, -0.7, 0.4, -inf, nan, -2.0])
    case("loss_corner", "kl_targets_none", lambda a, b: F.kl_div(a, b, reduction="none"),
         [("x", x), ("t", t)], 331)
    case("loss_corner", "kl_targets_sum", lambda a, b: F.kl_div(a, b, reduction="sum"),
         [("x", x[[0, 1, 4, 5, 8]]), ("t", t[[0, 1, 4, 5, 8]])], 332)
    tl = torch.tensor([0.0, -1.0, nan, -inf, 1.5])
    case("loss_corner", "kl_log_target_none",
         lambda a, b: F.kl_div(a, b, reduction="none", log_target=True),
         [("x", torch.tensor([-1.0, -2.0, -1.0, -1.0, 0.5])), ("t", tl)], 333)
    # cosine_similarity broadcasts before reducing: a size-1 dim along dim counts per element
    case("loss_corner", "cosine_broadcast_dim1", lambda a, b: F.cosine_similarity(a, b, dim=1),
         [("x", randn(3, 1, seed=21)), ("t", randn(3, 4, seed=22))], 334)
    case("loss_corner", "cosine_broadcast_0d_dim0", lambda a, b: F.cosine_similarity(a, b, dim=0),
         [("x", torch.tensor(2.0)), ("t", randn(3, seed=23))], 335)
    case("loss_corner", "cosine_0d_dimm1", lambda a, b: F.cosine_similarity(a, b, dim=-1),
         [("x", torch.tensor(2.0)), ("t", torch.tensor(-3.0))], 336)
    # norms below eps: each clamped to eps on its own, the gradient still through the norm
    case("loss_corner", "cosine_tiny_norms",
         lambda a, b: F.cosine_similarity(a, b, dim=1, eps=1e-8),
         [("x", torch.tensor([[1e-9, 1e-9, 1e-9], [1e-9, 2e-9, 0.0], [0.0, 0.0, 0.0]])),
          ("t", torch.tensor([[1e-9, 1e-9, 1e-9], [3.0, 4.0, 5.0], [1.0, -2.0, 0.5]]))], 339)
    case("loss_corner", "normalize_0d_dim0", lambda a: F.normalize(a, dim=0),
         [("x", torch.tensor(-1.5))], 337)
    case("loss_corner", "normalize_0d_p3_dimm1", lambda a: F.normalize(a, p=3.0, dim=-1),
         [("x", torch.tensor(0.25))], 338)


def einsum_cases():
    a, b = randint(-5, 5, 3, 4, seed=41), randint(-5, 5, 4, 2, seed=42)
    cases = [("int64_mm", "ij,jk->ik", [a, b]),
             ("int64_trace", "ii", [randint(-5, 5, 4, 4, seed=43)]),
             ("int64_ellipsis", "...ij,...jk->...ik", [randint(-5, 5, 2, 1, 3, 4, seed=44), randint(-5, 5, 5, 4, 2, seed=45)]),
             ("int64_three", "abc,cd,de->abe", [randint(-3, 3, 2, 3, 4, seed=46), randint(-3, 3, 4, 5, seed=47), randint(-3, 3, 5, 2, seed=48)]),
             ("int64_wraps", "i,i->", [torch.tensor([2**62, 2**62, 3]), torch.tensor([4, 1, -2])]),
             ("bool_sum", "ij->i", [randint(0, 2, 3, 4, seed=49).bool()]),
             ("bool_partial_sum", "ij,j->j", [randint(0, 2, 3, 4, seed=50).bool(), randint(0, 2, 4, seed=51).bool()]),
             ("bool_diag", "ii->i", [randint(0, 2, 4, 4, seed=52).bool()]),
             ("bool_outer", "i,j->ij", [randint(0, 2, 3, seed=53).bool(), randint(0, 2, 4, seed=54).bool()]),
             ("bool_hadamard", "ij,ij->ji", [randint(0, 2, 3, 4, seed=55).bool(), randint(0, 2, 3, 4, seed=56).bool()])]
    for k, (name, eq, ops) in enumerate(cases):
        case("einsum_int", name, lambda *xs, eq=eq: torch.einsum(eq, *xs),
             [(f"x{i}", t) for i, t in enumerate(ops)], 360 + k)


def main():
    global OUT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=OUT, help="fixtures root (default: tests/fixtures)")
    OUT = ap.parse_args().out
    torch.set_default_dtype(torch.float64)  # the float literals below
    for f in FAMILIES:
        shutil.rmtree(os.path.join(OUT, f), ignore_errors=True)
    reduce_cases()
    softmin_cases()
    loss_cases()
    einsum_cases()
    n = sum(len(os.listdir(os.path.join(OUT, f))) for f in FAMILIES)
    print(f"wrote {n} case files into {', '.join(FAMILIES)} under {OUT}")


if __name__ == "__main__":
    main()
