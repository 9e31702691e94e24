#!/usr/bin/python3
"""tools/make_indexing_fixtures.py — PyTorch reference values for tests/ops/test_indexing.cpp
(gather, scatter_add, topk, sort with ties, cumsum, tril/triu, one_hot, arange, x[...] indexing and
index_put_ with a mask, matmul of transposed and permuted views), one file per case,
tests/fixtures/indexing/<name>.safetensors (through tools/fixture_io.py).

Run with Debian's torch (1.13, CPU):  /usr/bin/python3 tools/make_indexing_fixtures.py [--out DIR]
Every case file holds the tensors
  <input>      each input (float64; int64 for indices, int64/bool for integer inputs)
  out          the op's output (for topk/sort: the values)
  indices      topk/sort only: the int64 indices
  dout         float outputs only: the fixed upstream gradient fed to backward
  d<input>     the gradient of each float input
and arange.safetensors one tensor per arange call (f32_tenths, f64_tenths, ..., i64_2p53).
Ties: torch.topk does not promise which of equal values it picks (1.13 picked the higher index
here); tapegrad keeps the lower index first, like a stable sort. So the case with ties
(topk_ties) takes its reference from torch.sort(stable=True) narrowed to k, and the script checks
that torch.topk's values agree with it. Seeds are fixed, so rerunning reproduces the files byte for
byte.
"""
import argparse
import os
import shutil

import torch
import torch.nn.functional as F

import fixture_io

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, "..", "tests", "fixtures"))


def save(name, tensors):
    fixture_io.write(fixture_io.case_path(OUT, "indexing", name), tensors)


def case(name, fn, inputs, seed):
    """inputs: list of (arg name, tensor); float tensors get gradients. fn returns a tensor or
    (values, indices)."""
    g = torch.Generator().manual_seed(seed)
    leaves, tensors = fixture_io.leaves(inputs)
    out = fn(*leaves)
    if isinstance(out, tuple):
        out, indices = out
        tensors["indices"] = indices
    tensors["out"] = out
    fixture_io.add_grads(tensors, inputs, leaves, out, g)
    save(name, tensors)


def randn(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def randint(lo, hi, *shape, seed):
    return torch.randint(lo, hi, shape, generator=torch.Generator().manual_seed(seed))


def stable_topk(x, k, dim, largest):
    v, i = torch.sort(x, dim=dim, descending=largest, stable=True)
    return v.narrow(dim, 0, k), i.narrow(dim, 0, k)


def main():
    global OUT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=OUT, help="fixtures root (default: tests/fixtures)")
    OUT = ap.parse_args().out
    shutil.rmtree(os.path.join(OUT, "indexing"), ignore_errors=True)

    # gather: repeated indices (the gradient sums), index smaller than x off the dim, index
    # longer than x along the dim, a negative dim
    case("gather_dim1", lambda x, i: torch.gather(x, 1, i),
         [("x", randn(3, 4, seed=1)), ("index", torch.tensor([[0, 3], [2, 2], [1, 0]]))], 201)
    case("gather_dim0", lambda x, i: torch.gather(x, 0, i),
         [("x", randn(3, 4, 2, seed=2)), ("index", randint(0, 3, 2, 3, 2, seed=3))], 202)
    case("gather_dimm1", lambda x, i: torch.gather(x, -1, i),
         [("x", randn(2, 3, 4, seed=4)), ("index", randint(0, 4, 2, 2, 6, seed=5))], 203)

    # scatter_add: repeated targets sum; x and src both get gradients
    case("scatter_add_dim0", lambda x, i, s: torch.scatter_add(x, 0, i, s),
         [("x", randn(3, 4, seed=6)), ("index", torch.tensor([[0, 1, 2, 0], [2, 1, 2, 0]])),
          ("src", randn(2, 4, seed=7))], 204)
    case("scatter_add_dimm1", lambda x, i, s: torch.scatter_add(x, -1, i, s),
         [("x", randn(2, 5, seed=8)), ("index", torch.tensor([[4, 0, 4], [1, 1, 1]])),
          ("src", randn(2, 3, seed=9))], 205)

    # topk on distinct values (every index is determined): largest along the last dim, smallest
    # along dim 0, k = 1 and k = size
    case("topk_k3", lambda x: torch.topk(x, 3, dim=-1), [("x", randn(3, 6, seed=10))], 206)
    case("topk_small_dim0", lambda x: torch.topk(x, 2, dim=0, largest=False),
         [("x", randn(5, 3, seed=11))], 207)
    case("topk_k1", lambda x: torch.topk(x, 1, dim=1), [("x", randn(2, 4, 3, seed=12))], 208)
    case("topk_kall", lambda x: torch.topk(x, 4, dim=-2), [("x", randn(2, 4, 3, seed=13))], 209)
    # topk with ties: the reference is the stable sort (lower index first)
    xt = randint(0, 3, 3, 7, seed=14).double()
    for largest in (True, False):
        v, _ = torch.topk(xt, 4, dim=1, largest=largest)
        sv, _ = stable_topk(xt, 4, 1, largest)
        assert torch.equal(v, sv), "torch.topk values disagree with the stable sort"
    case("topk_ties", lambda x: stable_topk(x, 4, 1, True), [("x", xt)], 210)
    case("topk_ties_small", lambda x: stable_topk(x, 4, 1, False), [("x", xt)], 211)

    # sort with ties (stable), ascending along the last dim, descending along dim 0; int64 input
    xs = randint(0, 4, 4, 6, seed=15).double()
    case("sort_ties", lambda x: torch.sort(x, dim=-1, stable=True), [("x", xs)], 212)
    case("sort_ties_desc0", lambda x: torch.sort(x, dim=0, descending=True, stable=True),
         [("x", xs)], 213)
    case("sort_int64", lambda x: torch.sort(x, dim=1, stable=True),
         [("x", randint(-3, 3, 3, 5, seed=16))], 214)

    # cumsum: float along a middle and the last dim; int64 and bool give int64
    case("cumsum_dim1", lambda x: torch.cumsum(x, 1), [("x", randn(3, 4, 2, seed=17))], 215)
    case("cumsum_dimm1", lambda x: torch.cumsum(x, -1), [("x", randn(2, 5, seed=18))], 216)
    case("cumsum_int64", lambda x: torch.cumsum(x, 0), [("x", randint(-5, 5, 4, 3, seed=19))], 217)
    case("cumsum_bool", lambda x: torch.cumsum(x, -1),
         [("x", randint(0, 2, 3, 4, seed=20).bool())], 218)

    # tril / triu on a batch of non-square matrices, several diagonals
    xm = randn(2, 3, 4, seed=21)
    case("tril_0", lambda x: torch.tril(x), [("x", xm)], 219)
    case("tril_m1", lambda x: torch.tril(x, -1), [("x", xm)], 220)
    case("triu_0", lambda x: torch.triu(x), [("x", xm)], 221)
    case("triu_2", lambda x: torch.triu(x, 2), [("x", xm)], 222)
    case("triu_m1_4d", lambda x: torch.triu(x, -1), [("x", randn(2, 1, 4, 3, seed=22))], 223)

    # one_hot with inferred and explicit num_classes
    ih = torch.tensor([[0, 2, 1], [2, 2, 0]])
    case("one_hot_infer", lambda i: F.one_hot(i), [("index", ih)], 224)
    case("one_hot_5", lambda i: F.one_hot(i, 5), [("index", ih)], 225)

    # x[...] (tapegrad's x.index({...})): integers, slices with steps and negative bounds, None,
    # Ellipsis, an int64 index tensor with a repeat (its gradient sums), a bool mask; index_put_
    # of a scalar through a mask; matmul of a transposed view (BLAS flag) and of a permuted one
    x3 = randn(3, 4, 5, seed=26)
    case("index_int_slice_step", lambda x: x[1, :, ::2], [("x", x3)], 230)
    case("index_none_ellipsis", lambda x: x[None, ..., -1], [("x", x3)], 231)
    case("index_neg_slice", lambda x: x[-2:, 1:-1, 3], [("x", x3)], 232)
    case("index_int64_rows", lambda x, i: x[:, i], [("x", x3), ("index", torch.tensor([3, 0, 3]))],
         233)
    case("index_bool_mask", lambda x: x[x > 0], [("x", x3)], 234)

    def put_mask(x):
        y = x * 1
        y[x > 0.5] = -1.0
        return y

    case("index_put_mask", put_mask, [("x", x3)], 235)
    case("matmul_transposed", lambda a, b: a.t() @ b.transpose(0, 1),
         [("a", randn(4, 3, seed=27)), ("b", randn(5, 4, seed=28))], 236)
    case("matmul_permuted", lambda q, k: q.transpose(1, 2) @ k.permute(0, 2, 3, 1),
         [("q", randn(2, 5, 3, 4, seed=29)), ("k", randn(2, 6, 3, 4, seed=30))], 237)

    # advanced indexing (tests/ops/test_advanced_indexing.cpp): several int64 indices, 2-D
    # indices, non-adjacent indices (the broadcast dims go first), broadcasting between indices,
    # integers, slices, None and Ellipsis beside them, negative indices, a 0-dim int64 index, bool
    # masks among int64 indices; repeated positions sum their gradients
    x4 = randn(2, 3, 4, 5, seed=40)
    i3, j3 = torch.tensor([2, 0, 2, -1]), torch.tensor([1, 3, 1, -4])
    case("adv_two", lambda x, i, j: x[i, j], [("x", x3), ("i", i3), ("j", j3)], 240)
    case("adv_2d", lambda x, i: x[:, i], [("x", x3), ("i", torch.tensor([[0, 3], [-1, 0], [2, 2]]))],
         241)
    case("adv_nonadjacent", lambda x, i, j: x[i, :, j],
         [("x", x3), ("i", torch.tensor([[1], [2]])), ("j", torch.tensor([4, 0, -1]))], 242)
    case("adv_broadcast", lambda x, i, j: x[..., i, j],
         [("x", x4), ("i", torch.tensor([[0], [2], [1]])), ("j", torch.tensor([[4, 0]]))], 243)
    case("adv_mixed", lambda x, i, j: x[1, :, i, None, j],
         [("x", x4), ("i", torch.tensor([3, 0, 3])), ("j", torch.tensor([2, 2, 4]))], 244)
    case("adv_scalar_index", lambda x, i, j: x[i, 1:, j],
         [("x", x3), ("i", torch.tensor([2, 0])), ("j", torch.tensor(3))], 245)
    case("adv_none_first", lambda x, i, j: x[None, i, ..., j],
         [("x", x3), ("i", torch.tensor([1, 1])), ("j", torch.tensor([0, 4]))], 246)
    case("adv_mask_and_index", lambda x, m, j: x[m, :, j],
         [("x", x3), ("m", torch.tensor([True, False, True])), ("j", torch.tensor([4, 1]))], 247)
    m2 = torch.tensor([[True, False, True, False], [False, False, True, True], [True] * 4])
    case("adv_mask2d_index", lambda x, m, j: x[m, j],
         [("x", x3), ("m", m2), ("j", torch.tensor([0, 1, 2, 3, 4, 0, 1, 2]))], 248)

    # index_put / index_put_ with several indices: accumulate sums repeated positions; without
    # it each position takes one write (distinct positions here: with repeats PyTorch hands the
    # gradient to every repeated value, tapegrad only to the write that lands; the C++ test checks
    # that case by hand); values broadcast to the indexed shape
    def put(acc):
        def f(x, i, j, v):
            return x.index_put((i, j), v, accumulate=acc)
        return f

    case("put_accumulate", put(True),
         [("x", x3), ("i", i3), ("j", j3), ("v", randn(4, 5, seed=41))], 250)
    case("put_distinct", put(False),
         [("x", x3), ("i", torch.tensor([[0, 1], [2, 0]])), ("j", torch.tensor([3, 0])),
          ("v", randn(2, 1, 5, seed=42))], 251)
    case("put_nonadjacent_accumulate",
         lambda x, i, j, v: torch.ops.aten.index_put(x, [i, None, j], v, True),
         [("x", x3), ("i", torch.tensor([2, 0, 2])), ("j", torch.tensor([[4], [4]])),
          ("v", randn(4, seed=45))], 252)

    # pad with negative pads (cropping) in every mode, on a (C, H, W) input: constant crops on both
    # dims; reflect and circular (batched: 1.13 wants (N, C, H, W) there) crop one side and pad the other; replicate crops past the whole
    # width (PyTorch 1.13 clamps: the output repeats the last column)
    xp = randn(2, 4, 5, seed=43)
    case("pad_constant_crop", lambda x: F.pad(x, (-1, 2, 1, -2), value=0.5), [("x", xp)], 260)
    case("pad_reflect_crop", lambda x: F.pad(x, (3, -2, -1, 2), mode="reflect"), [("x", xp)], 261)
    case("pad_replicate_crop", lambda x: F.pad(x, (-6, 3, -1, 1), mode="replicate"), [("x", xp)],
         262)
    case("pad_circular_crop", lambda x: F.pad(x, (-2, 3, 2, -1), mode="circular"),
         [("x", xp[None])], 263)

    # scatter with one value (the one-hot idiom), a repeated target
    case("scatter_value", lambda x, i: torch.scatter(x, 1, i, 1.0),
         [("x", randn(3, 5, seed=44)), ("i", torch.tensor([[1, 4], [0, 0], [3, 2]]))], 264)

    # arange in every dtype: float32 rounds start + i·step computed in double; int64 truncates
    # its arguments first
    save("arange", {
        "f32_tenths": torch.arange(0, 1, 0.1, dtype=torch.float32),
        "f64_tenths": torch.arange(0, 1, 0.1, dtype=torch.float64),
        "f32_2p24": torch.arange(16777216, 16777220, 1, dtype=torch.float32),
        "f64_down": torch.arange(2, -1, -0.75, dtype=torch.float64),
        "i64_down": torch.arange(5, 0, -1.5, dtype=torch.int64),
        "i64_frac": torch.arange(-2.5, 2, 1, dtype=torch.int64),
        "i64_2p53": torch.arange(2**53, 2**53 + 4, 1, dtype=torch.int64),
    })

    files = os.listdir(os.path.join(OUT, "indexing"))
    print(f"wrote {len(files)} case files into {os.path.join(OUT, 'indexing')}")


if __name__ == "__main__":
    main()
