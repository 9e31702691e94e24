#!/usr/bin/python3
"""tools/make_fixtures.py — PyTorch reference values for tests/ops/test_parity.cpp: softmax,
log_softmax, layer_norm, rms_norm, gelu, cross_entropy and broadcasting matmul, one small file per case,
tests/fixtures/<family>/<case>.safetensors (through tools/fixture_io.py).

Run with Debian's torch (1.13, CPU):  /usr/bin/python3 tools/make_fixtures.py [--out DIR]
Every case file holds the tensors
  <input>      each input (float64; int64 for targets)
  out          the op's output
  dout         the fixed upstream gradient fed to backward (same shape as out)
  d<input>     the gradient of each differentiable input
Seeds are fixed, so rerunning reproduces the files byte for byte.
"""
import argparse
import math
import os

import torch
import torch.nn.functional as F

import fixture_io

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, "..", "tests", "fixtures"))


def case(family, name, fn, inputs, seed, consts=()):
    """inputs: list of (arg name, tensor); float tensors get gradients. consts: (name, tensor)
    pairs stored with the case but passed to fn after the inputs without gradients."""
    g = torch.Generator().manual_seed(seed)
    leaves, tensors = fixture_io.leaves(inputs, dict(consts))
    out = fn(*leaves, *[t for _, t in consts])
    tensors["out"] = out
    fixture_io.add_grads(tensors, inputs, leaves, out, g)
    fixture_io.write(fixture_io.case_path(OUT, family, name), tensors)
    N[0] += 1


N = [0]  # case files written


def randn(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def main():
    global OUT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=OUT, help="fixtures root (default: tests/fixtures)")
    OUT = ap.parse_args().out
    torch.manual_seed(0)

    # softmax / log_softmax
    case("softmax", "dim1", lambda x: F.softmax(x, 1), [("x", randn(3, 5, seed=1))], 101)
    case("softmax", "dim0", lambda x: F.softmax(x, 0), [("x", randn(4, 2, 3, seed=2))], 102)
    case("log_softmax", "dimm1", lambda x: F.log_softmax(x, -1), [("x", randn(2, 3, 6, seed=3))], 103)
    case("log_softmax", "dim1", lambda x: F.log_softmax(x, 1), [("x", randn(2, 4, 3, seed=4))], 104)

    # layer_norm with weight and bias, over 1 and 2 trailing dims
    case("layer_norm", "1d", lambda x, w, b: F.layer_norm(x, (6,), w, b, 1e-5),
         [("x", randn(2, 3, 6, seed=5) * 2 + 1), ("w", randn(6, seed=6)), ("b", randn(6, seed=7))], 105)
    case("layer_norm", "2d", lambda x, w, b: F.layer_norm(x, (3, 4), w, b, 1e-5),
         [("x", randn(2, 3, 4, seed=8)), ("w", randn(3, 4, seed=9)), ("b", randn(3, 4, seed=10))], 106)

    # rms_norm (torch 1.13 has no F.rms_norm: torch 2.4's definition, composed)
    def rms(x, w, ns, eps):
        dims = tuple(range(-len(ns), 0))
        y = x * torch.rsqrt(x.pow(2).mean(dims, keepdim=True) + eps)
        return y * w if w is not None else y
    case("rms_norm", "1d", lambda x, w: rms(x, w, (6,), 1e-5),
         [("x", randn(2, 3, 6, seed=19) * 2 + 1), ("w", randn(6, seed=20))], 118)
    case("rms_norm", "2d", lambda x, w: rms(x, w, (3, 4), 1e-6),
         [("x", randn(2, 3, 4, seed=21)), ("w", randn(3, 4, seed=22))], 119)
    case("rms_norm", "noweight", lambda x: rms(x, None, (5,), 1e-5), [("x", randn(4, 5, seed=23))], 120)

    # rotary embeddings: x with cos, sin (T, R/2) of base 10000 (all three get gradients)
    def tables(T, R, offset=0):
        inv = 10000.0 ** (-torch.arange(0, R, 2, dtype=torch.float64) / R)
        ang = torch.arange(offset, offset + T, dtype=torch.float64)[:, None] * inv[None, :]
        return torch.cos(ang), torch.sin(ang)

    def rotate_half(x, c, s):  # Hugging Face's LLaMA / GPT-NeoX form, x (B, NH, T, hs)
        cf, sf = torch.cat([c, c], -1), torch.cat([s, s], -1)
        h = x.shape[-1] // 2
        rot = torch.cat([-x[..., h:], x[..., :h]], -1)
        return x * cf + rot * sf

    def interleaved(x, c, s, R):  # Meta's LLaMA form (complex pairs), x (B, T, NH, hs), first R dims
        xr = x[..., :R].reshape(*x.shape[:-1], R // 2, 2)
        xc = torch.complex(xr[..., 0], xr[..., 1])
        f = torch.complex(c, s)[None, :, None, :]  # broadcast over B and NH
        o = xc * f
        rot = torch.stack([o.real, o.imag], -1).reshape(*x.shape[:-1], R)
        return torch.cat([rot, x[..., R:]], -1)

    c, s = tables(5, 8, offset=3)
    case("rotary", "half", rotate_half, [("x", randn(2, 3, 5, 8, seed=24)), ("cos", c), ("sin", s)], 121)
    c, s = tables(5, 6)
    case("rotary", "interleaved_partial", lambda x, c, s: interleaved(x, c, s, 6),
         [("x", randn(2, 5, 3, 8, seed=25)), ("cos", c), ("sin", s)], 122)

    # glu, and the SwiGLU feed-forward: down(silu(gate(x)) * up(x)), bias-free
    case("glu", "dimm1", lambda x: F.glu(x, -1), [("x", randn(3, 4, 6, seed=26))], 123)
    case("glu", "dim0", lambda x: F.glu(x, 0), [("x", randn(4, 5, seed=27))], 124)
    case("swiglu", "block",
         lambda x, wg, wu, wd: F.linear(F.silu(F.linear(x, wg)) * F.linear(x, wu), wd),
         [("x", randn(2, 3, 8, seed=28)), ("wg", randn(12, 8, seed=29) * 0.3),
          ("wu", randn(12, 8, seed=30) * 0.3), ("wd", randn(8, 12, seed=31) * 0.3)], 125)

    # binary math (ops/binary/math.cpp): broadcasting, both signs, a tie for logaddexp
    xa = randn(3, 4, seed=80) * 3
    xb = randn(4, seed=81) * 2
    xb[1] = -1.5
    case("binary_math", "fmod", torch.fmod, [("a", xa), ("b", xb)], 150)
    case("binary_math", "remainder", torch.remainder, [("a", xa), ("b", xb)], 151)
    case("binary_math", "copysign", torch.copysign, [("a", xa), ("b", xb)], 152)
    w = torch.rand(3, 4, generator=torch.Generator().manual_seed(82), dtype=torch.float64) * 1.4 - 0.2
    case("binary_math", "lerp", torch.lerp, [("a", xa), ("e", randn(3, 4, seed=83)), ("w", w)], 153)
    lb = randn(3, 4, seed=84) * 30
    lb[0, 0] = xa[0, 0]
    case("binary_math", "logaddexp", torch.logaddexp, [("a", xa), ("b", lb)], 154)

    # products and scans (ops/reduce/scan.cpp): zeros in some lines, ties for cummax / cummin
    xs = randn(3, 5, 2, seed=95)
    xz = xs.clone()
    xz[0, 2, 0] = 0.0
    xz[1, 1, 1] = 0.0
    xz[1, 3, 1] = 0.0
    xt = torch.round(randn(3, 6, seed=96) * 2) / 2
    case("scan", "prod_dim1_zeros", lambda x: torch.prod(x, 1), [("x", xz)], 170)
    case("scan", "prod_dim2_keepdim", lambda x: torch.prod(x, 2, keepdim=True), [("x", xs)], 171)
    case("scan", "prod_all", lambda x: torch.prod(x), [("x", xs[:, :3])], 172)
    case("scan", "cumprod_dim1_zeros", lambda x: torch.cumprod(x, 1), [("x", xz)], 173)
    case("scan", "cummax_ties", lambda x: torch.cummax(x, 1).values, [("x", xt)], 174)
    case("scan", "cummin_dim0", lambda x: torch.cummin(x, 0).values, [("x", xt)], 175)
    case("scan", "logcumsumexp_dim1", lambda x: torch.logcumsumexp(x, 1), [("x", xs * 20)], 176)

    # positions picked by index (ops/shape/diagonal.cpp) and einsum (ops/matmul/einsum.cpp)
    x3 = randn(3, 4, 5, seed=100)
    case("picks", "diagonal_off1_d02", lambda x: torch.diagonal(x, 1, 0, 2), [("x", x3)], 180)
    case("picks", "diagonal_offm2_d21", lambda x: torch.diagonal(x, -2, 2, 1), [("x", x3)], 181)
    case("picks", "diag_vec_km1", lambda x: torch.diag(x, -1), [("x", randn(4, seed=101))], 182)
    case("picks", "diag_mat_k1", lambda x: torch.diag(x, 1), [("x", randn(4, 5, seed=102))], 183)
    case("picks", "unfold_d1_s3_st2", lambda x: x.unfold(1, 3, 2), [("x", randn(2, 8, 3, seed=103))], 184)
    case("picks", "unfold_overlap", lambda x: x.unfold(-1, 4, 1), [("x", randn(3, 6, seed=104))], 185)
    ein = [("mm", "ij,jk->ik", [(3, 4), (4, 5)]),
           ("bmm", "bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
           ("attn", "bhid,bhjd->bhij", [(2, 3, 4, 5), (2, 3, 6, 5)]),
           ("trace", "ii", [(4, 4)]),
           ("diag", "ii->i", [(4, 4)]),
           ("dot", "i,i->", [(5,), (5,)]),
           ("outer", "i,j->ij", [(3,), (4,)]),
           ("implicit", "ij,jk", [(3, 4), (4, 2)]),
           ("ellipsis_broadcast", "...ij,...jk->...ik", [(2, 1, 3, 4), (5, 4, 2)]),
           ("three", "abc,cd,de->abe", [(2, 3, 4), (4, 5), (5, 2)]),
           ("transpose_sum", "ijk->kj", [(2, 3, 4)]),
           ("bilinear", "bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)])]
    for k, (name, eq, shapes) in enumerate(ein):
        ins = [(f"x{i}", randn(*s, seed=110 + 10 * k + i)) for i, s in enumerate(shapes)]
        case("einsum", name, lambda *xs, eq=eq: torch.einsum(eq, *xs), ins, 190 + k)

    # attention with a learned T5 relative-position bias and ALiBi (AttentionMask::relative_bias,
    # alibi): the bias added to the scores as PyTorch's attn_mask would be; q, k, v, table and
    # slopes all get gradients
    def t5_bucket(rel, bidirectional, num_buckets, max_distance):
        rb = torch.zeros_like(rel)
        if bidirectional:
            num_buckets //= 2
            rb += (rel > 0).to(torch.long) * num_buckets
            rel = torch.abs(rel)
        else:
            rel = -torch.min(rel, torch.zeros_like(rel))
        max_exact = num_buckets // 2
        is_small = rel < max_exact
        large = max_exact + (torch.log(rel.float() / max_exact) / math.log(max_distance / max_exact)
                             * (num_buckets - max_exact)).to(torch.long)
        large = torch.min(large, torch.full_like(large, num_buckets - 1))
        return rb + torch.where(is_small, rel, large)

    def biased_attention(q, k, v, table, slopes, causal, bidirectional, max_distance):
        T, S = q.shape[2], k.shape[2]
        i = torch.arange(T)[:, None] + (S - T)  # bottom-right positions
        j = torch.arange(S)[None, :]
        bias = table[:, t5_bucket(j - i, bidirectional, table.shape[1], max_distance)]  # (NH, T, S)
        bias = bias - slopes[:, None, None] * (i - j).abs().to(q.dtype)
        sc = q @ k.transpose(-2, -1) / q.shape[-1] ** 0.5 + bias
        if causal:
            sc = sc.masked_fill(j > i, float("-inf"))
        return torch.softmax(sc, -1) @ v

    qb, kb, vb = randn(2, 3, 20, 4, seed=200), randn(2, 3, 26, 4, seed=201), randn(2, 3, 26, 5, seed=202)
    case("attention_bias", "t5_causal_alibi",
         lambda q, k, v, t, a: biased_attention(q, k, v, t, a, True, False, 16),
         [("q", qb), ("k", kb), ("v", vb), ("table", randn(3, 8, seed=203)),
          ("slopes", torch.tensor([0.5, 0.25, 0.125], dtype=torch.float64))], 200)
    case("attention_bias", "t5_bidirectional",
         lambda q, k, v, t, a: biased_attention(q, k, v, t, a, False, True, 12),
         [("q", qb), ("k", kb), ("v", vb), ("table", randn(3, 10, seed=204)),
          ("slopes", torch.zeros(3, dtype=torch.float64))], 201)

    # scatter and scatter_reduce (ops/index/scatter.cpp): repeated targets,
    # zeros for prod, ties for amax / amin
    xs0 = randn(3, 5, seed=210)
    src = randn(3, 3, seed=211)  # index-shaped: torch 1.13 fails on a larger src in backward
    idx_u = torch.tensor([[0, 2, 4], [1, 3, 0], [4, 1, 2]])  # unique per row (overwrite)
    idx_r = torch.tensor([[0, 2, 0], [1, 1, 1], [4, 0, 4]])  # repeated targets
    case("scatter", "overwrite", lambda x, s, i: torch.scatter(x, 1, i, s),
         [("x", xs0), ("src", src)], 210, consts=[("index", idx_u)])
    for red in ("sum", "mean", "amax", "amin"):
        for inc in (True, False):
            case("scatter", f"{red}_{'self' if inc else 'noself'}",
                 lambda x, s, i, red=red, inc=inc: torch.scatter_reduce(x, 1, i, s, red, include_self=inc),
                 [("x", xs0), ("src", src)], 211, consts=[("index", idx_r)])
    xp = xs0.clone()
    xp[0, 0] = 0.0
    sp = src.clone()
    sp[1, 1] = 0.0
    sp[2, 0] = 0.0
    for inc in (True, False):
        case("scatter", f"prod_zeros_{'self' if inc else 'noself'}",
             lambda x, s, i, inc=inc: torch.scatter_reduce(x, 1, i, s, "prod", include_self=inc),
             [("x", xp), ("src", sp)], 212, consts=[("index", idx_r)])
    xt2 = torch.round(randn(3, 5, seed=213))
    st2 = torch.round(randn(3, 3, seed=214))
    case("scatter", "amax_ties", lambda x, s, i: torch.scatter_reduce(x, 1, i, s, "amax"),
         [("x", xt2), ("src", st2)], 213, consts=[("index", idx_r)])

    # nn::LlamaDecoderLayer: RMSNorm, grouped-query attention with rotary (half-split) q and k,
    # causal (and a sliding window of W keys: i - W < j <= i), SwiGLU; NH 4 query / NKV 2 kv heads
    def llama_layer(x, wq, wk, wv, wo, wg, wu, wd, n1, n2, NH=4, NKV=2, eps=1e-6, window=0):
        B, T, E = x.shape
        hs = E // NH

        def rms(t, w):
            return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps) * w

        h = rms(x, n1)
        q = F.linear(h, wq).view(B, T, NH, hs).transpose(1, 2)
        k = F.linear(h, wk).view(B, T, NKV, hs).transpose(1, 2)
        v = F.linear(h, wv).view(B, T, NKV, hs).transpose(1, 2)
        c, s = tables(T, hs)
        q, k = rotate_half(q, c, s), rotate_half(k, c, s)
        k, v = k.repeat_interleave(NH // NKV, 1), v.repeat_interleave(NH // NKV, 1)
        i = torch.arange(T)[:, None]
        j = torch.arange(T)[None, :]
        allowed = (j <= i) & ((i - j < window) if window else True)
        sc = (q @ k.transpose(-2, -1)) / hs ** 0.5
        att = torch.softmax(sc.masked_fill(~allowed, float("-inf")), -1) @ v
        h2 = x + F.linear(att.transpose(1, 2).reshape(B, T, E), wo)
        m = rms(h2, n2)
        return h2 + F.linear(F.silu(F.linear(m, wg)) * F.linear(m, wu), wd)

    def llama_inputs(seed):
        return [("x", randn(2, 6, 8, seed=seed)), ("wq", randn(8, 8, seed=seed + 1) * 0.4),
                ("wk", randn(4, 8, seed=seed + 2) * 0.4), ("wv", randn(4, 8, seed=seed + 3) * 0.4),
                ("wo", randn(8, 8, seed=seed + 4) * 0.4), ("wg", randn(12, 8, seed=seed + 5) * 0.3),
                ("wu", randn(12, 8, seed=seed + 6) * 0.3), ("wd", randn(8, 12, seed=seed + 7) * 0.3),
                ("n1", 1 + 0.2 * randn(8, seed=seed + 8)), ("n2", 1 + 0.2 * randn(8, seed=seed + 9))]

    case("llama", "decoder_layer_gqa", llama_layer, llama_inputs(60), 140)
    case("llama", "decoder_layer_gqa_window3", lambda *a: llama_layer(*a, window=3),
         llama_inputs(70), 141)

    # the losses past cross_entropy (ops/loss/composed.cpp)
    x, t = randn(4, 5, seed=32), randn(4, 5, seed=33)
    case("losses", "mse_mean", lambda a, b: F.mse_loss(a, b), [("x", x), ("t", t)], 126)
    case("losses", "l1_sum", lambda a, b: F.l1_loss(a, b, reduction="sum"), [("x", x), ("t", t)], 127)
    case("losses", "smooth_l1_beta0.5", lambda a, b: F.smooth_l1_loss(a, b, beta=0.5),
         [("x", x), ("t", t)], 128)
    case("losses", "huber_delta0.7_none", lambda a, b: F.huber_loss(a, b, reduction="none", delta=0.7),
         [("x", x), ("t", t)], 129)
    p = torch.sigmoid(randn(4, 5, seed=34))
    tb = torch.rand(4, 5, generator=torch.Generator().manual_seed(35), dtype=torch.float64)
    case("losses", "bce_weight", lambda a, b, w: F.binary_cross_entropy(a, b, weight=w),
         [("x", p), ("t", tb)], 130, consts=[("weight", randn(5, seed=36).abs())])
    case("losses", "bce_logits_pos_weight",
         lambda a, b, w, pw: F.binary_cross_entropy_with_logits(a, b, weight=w, pos_weight=pw),
         [("x", x * 3), ("t", tb)], 131,
         consts=[("weight", randn(4, 5, seed=37).abs()), ("pos_weight", randn(5, seed=38).abs() + 0.5)])
    case("losses", "bce_logits_sum", lambda a, b: F.binary_cross_entropy_with_logits(a, b, reduction="sum"),
         [("x", x * 3), ("t", tb)], 132)
    lp = F.log_softmax(randn(3, 4, 5, seed=39), 1)
    tn = torch.tensor([[0, 3, -100, 1, 2], [2, 2, 0, -100, 3], [1, 0, 3, 3, 0]])
    case("losses", "nll_weight_ignore", lambda a, b, w: F.nll_loss(a, b, weight=w),
         [("x", lp), ("t", tn)], 133, consts=[("weight", randn(4, seed=40).abs() + 0.1)])
    case("losses", "nll_none", lambda a, b: F.nll_loss(a, b, reduction="none"),
         [("x", F.log_softmax(randn(6, 4, seed=41), 1)), ("t", torch.tensor([0, 3, 1, 1, 2, 0]))], 134)
    q = F.log_softmax(randn(4, 6, seed=42), 1)
    pt = F.softmax(randn(4, 6, seed=43), 1)
    pt[0, 2] = 0.0  # a zero target probability: xlogy's 0
    case("losses", "kl_batchmean", lambda a, b: F.kl_div(a, b, reduction="batchmean"),
         [("x", q), ("t", pt)], 135)
    case("losses", "kl_log_target_sum",
         lambda a, b: F.kl_div(a, b, reduction="sum", log_target=True),
         [("x", q), ("t", F.log_softmax(randn(4, 6, seed=44), 1))], 136)
    case("losses", "cosine_dim1", lambda a, b: F.cosine_similarity(a, b, dim=1),
         [("x", randn(4, 6, 3, seed=45)), ("t", randn(4, 6, 3, seed=46))], 137)
    case("losses", "normalize_p2", lambda a: F.normalize(a, dim=1), [("x", randn(4, 6, seed=47))], 138)
    case("losses", "normalize_p3_dimm1", lambda a: F.normalize(a, p=3.0, dim=-1),
         [("x", randn(3, 5, seed=48))], 139)

    # reordering and repeating (ops/shape/repeat.cpp)
    r = randn(2, 3, 4, seed=49)
    case("repeat", "flip_0_2", lambda x: torch.flip(x, (0, 2)), [("x", r)], 140)
    case("repeat", "roll_1_m1", lambda x: torch.roll(x, (1, -3), (1, 2)), [("x", r)], 141)
    case("repeat", "roll_flat", lambda x: torch.roll(x, 5), [("x", r)], 142)
    case("repeat", "repeat_2_1_1_3", lambda x: x.repeat(2, 1, 1, 3), [("x", r)], 143)
    case("repeat", "repeat_interleave_3_dim1", lambda x: torch.repeat_interleave(x, 3, dim=1), [("x", r)], 144)
    case("repeat", "pad_constant", lambda x: F.pad(x, (1, 2, -1, 1), value=0.5), [("x", r)], 145)
    r4 = randn(2, 3, 4, 5, seed=50)  # torch 1.13 pads the last k dims of a (k+2)-D input here
    case("repeat", "pad_reflect", lambda x: F.pad(x, (3, 2, 2, 1), mode="reflect"), [("x", r4)], 146)
    case("repeat", "pad_replicate", lambda x: F.pad(x, (2, 3, 1, 0), mode="replicate"), [("x", r4)], 147)
    case("repeat", "pad_circular", lambda x: F.pad(x, (4, 1, 1, 3), mode="circular"), [("x", r4)], 148)

    # gelu
    case("gelu", "none", lambda x: F.gelu(x), [("x", randn(4, 5, seed=11) * 2)], 107)
    case("gelu", "tanh", lambda x: F.gelu(x, approximate="tanh"), [("x", randn(4, 5, seed=12) * 2)], 108)

    # cross_entropy
    logits = randn(6, 5, seed=13) * 2
    tgt = torch.tensor([1, 0, 4, 2, 2, 3])
    tgt_ign = torch.tensor([1, -100, 4, 2, -100, 3])
    for red in ("mean", "sum", "none"):
        case("cross_entropy", red, lambda x, t, red=red: F.cross_entropy(x, t, reduction=red),
             [("x", logits), ("t", tgt)], 109)
    case("cross_entropy", "ignore", lambda x, t: F.cross_entropy(x, t, ignore_index=-100), [("x", logits), ("t", tgt_ign)], 110)
    case("cross_entropy", "smooth", lambda x, t: F.cross_entropy(x, t, label_smoothing=0.1), [("x", logits), ("t", tgt)], 111)
    case("cross_entropy", "smooth_ignore_none",
         lambda x, t: F.cross_entropy(x, t, ignore_index=-100, label_smoothing=0.2, reduction="none"),
         [("x", logits), ("t", tgt_ign)], 112)
    case("cross_entropy", "smooth_ignore_mean",
         lambda x, t: F.cross_entropy(x, t, ignore_index=2, label_smoothing=0.3),
         [("x", logits), ("t", tgt)], 113)
    tgt_ncd = torch.tensor([[0, 3, 1], [2, -100, 3]])
    case("cross_entropy", "ncd", lambda x, t: F.cross_entropy(x, t, label_smoothing=0.05),
         [("x", randn(2, 4, 3, seed=14)), ("t", tgt_ncd)], 114)
    case("cross_entropy", "ncd_none", lambda x, t: F.cross_entropy(x, t, reduction="none"),
         [("x", randn(2, 4, 3, seed=14)), ("t", tgt_ncd)], 115)

    # class weights and probability targets (composed in ops/loss/cross_entropy.cpp)
    cw = torch.tensor([0.5, 2.0, 1.0, 0.25, 1.5], dtype=torch.float64)
    for red in ("mean", "sum", "none"):
        case("cross_entropy", f"weight_{red}",
             lambda x, t, w, red=red: F.cross_entropy(x, t, weight=w, reduction=red),
             [("x", logits), ("t", tgt_ign)], 160, consts=[("w", cw)])
    case("cross_entropy", "weight_smooth_ignore_mean",
         lambda x, t, w: F.cross_entropy(x, t, weight=w, ignore_index=2, label_smoothing=0.2),
         [("x", logits), ("t", tgt)], 161, consts=[("w", cw)])
    case("cross_entropy", "weight_smooth_none",
         lambda x, t, w: F.cross_entropy(x, t, weight=w, label_smoothing=0.1, reduction="none"),
         [("x", logits), ("t", tgt_ign)], 162, consts=[("w", cw)])
    probs = torch.softmax(randn(6, 5, seed=90), -1)
    case("cross_entropy", "probs_mean", lambda x, p: F.cross_entropy(x, p),
         [("x", logits), ("p", probs)], 163)
    case("cross_entropy", "probs_weight_smooth_sum",
         lambda x, p, w: F.cross_entropy(x, p, weight=w, label_smoothing=0.1, reduction="sum"),
         [("x", logits), ("p", probs)], 164, consts=[("w", cw)])
    probs_ncd = torch.softmax(randn(2, 4, 3, seed=91), 1)
    case("cross_entropy", "probs_ncd_none", lambda x, p: F.cross_entropy(x, p, reduction="none"),
         [("x", randn(2, 4, 3, seed=14)), ("p", probs_ncd)], 165)

    # broadcasting matmul (the test lives with the matmul family)
    case("matmul", "4d3d", torch.matmul, [("a", randn(2, 1, 3, 4, seed=15)), ("b", randn(5, 4, 6, seed=16))], 116)
    case("matmul", "1d3d", torch.matmul, [("a", randn(4, seed=17)), ("b", randn(2, 4, 3, seed=18))], 117)

    print(f"wrote {N[0]} case files into {OUT}")


if __name__ == "__main__":
    main()
