#!/usr/bin/python3
"""tools/make_mha_fixtures.py — PyTorch nn.MultiheadAttention reference values for tapegrad's MHA tests.

Run with Debian's torch (1.13, CPU), not the python3 on PATH:
    /usr/bin/python3 tools/make_mha_fixtures.py

For every configuration <name> in CONFIGS this writes one file,
tests/fixtures/mha/<name>.safetensors (through tools/fixture_io.py), holding the tensors
  query key value                  inputs, float64, in the layout given to PyTorch
  attn_mask                        when present: bool (True = blocked) or float64 (added to the scores)
  key_padding_mask                 when present: bool (True = padded / blocked)
  <param>                          every parameter under its state_dict name
                                   (in_proj_weight, in_proj_bias, q_proj_weight, k_proj_weight,
                                   v_proj_weight, out_proj.weight, out_proj.bias, bias_k, bias_v)
  out                              attn_output
  weights                          attn_output_weights (only when need_weights)
  d_out                            the fixed upstream gradient (same shape as out)
  d_query d_key d_value, d_<param> gradients after out.backward(d_out) (weights take no part)
and, as its string metadata, the configuration (see docs/mha_fixtures.md) and "index": every
configuration's name in CONFIGS' order, so the test knows which files to expect.
    /usr/bin/python3 tools/make_mha_fixtures.py [--out DIR]   (DIR: the fixtures root, default
    tests/fixtures; tools/check_fixtures.py compares a rerun with the committed files)

All dtypes are F64, I64 or BOOL. Seeds are fixed per configuration, so a rerun reproduces every
file byte for byte. The module runs in training mode with dropout 0 and
inputs that require grad, so PyTorch 1.13 always takes the Python path
(F.multi_head_attention_forward), never the fused "fast path".

Every configuration is also recomputed by an independent float64 re-implementation of the
conventions documented in docs/mha_fixtures.md (explicit per-batch, per-head loops); its output,
weights and (through autograd) gradients are checked against PyTorch's to 1e-12, so the fixtures
and the document cannot drift apart silently.
"""
import argparse
import math
import os
import shutil

import numpy as np
import torch

import fixture_io

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, "..", "tests", "fixtures"))  # the fixtures root

E, NH, B = 8, 2, 2
MAXDIFF = [0.0]  # largest |PyTorch - reference| seen, printed at the end


# ----------------------------------------------------------------------------- mask builders
# All builders return "blocked" masks in PyTorch MHA polarity: True = query i may NOT see key j.
def causal_blocked(T, S):
    """Top-left causal (PyTorch's convention for an explicit (T, S) mask): key j allowed iff j <= i."""
    return torch.triu(torch.ones(T, S, dtype=torch.bool), diagonal=1)


def local_blocked(T, S, left, right):
    """Ours (left, right), inclusive: key j allowed iff i - left <= j <= i + right."""
    i = torch.arange(T).view(T, 1)
    j = torch.arange(S).view(1, S)
    return ~((j >= i - left) & (j <= i + right))


def blocked_window_blocked(T, S, W):
    """Non-overlapping blocks of W from position 0: key j allowed iff i // W == j // W."""
    i = torch.arange(T).view(T, 1)
    j = torch.arange(S).view(1, S)
    return (i // W) != (j // W)


def to_float_mask(blocked):
    """Bool (True = blocked) -> float additive mask: -inf where blocked, 0 elsewhere."""
    m = torch.zeros(blocked.shape, dtype=torch.float64)
    return m.masked_fill(blocked, float("-inf"))


def alibi_like(T, S, slope):
    """A finite float additive bias -slope * |i - j| (no -inf)."""
    i = torch.arange(T, dtype=torch.float64).view(T, 1)
    j = torch.arange(S, dtype=torch.float64).view(1, S)
    return -slope * (i - j).abs()


def kpm_trailing(Bn, S, pads):
    """key_padding_mask (B, S): batch b has its last pads[b] keys padded (True = padded)."""
    m = torch.zeros(Bn, S, dtype=torch.bool)
    for b, p in enumerate(pads):
        if p:
            m[b, S - p:] = True
    return m


# ----------------------------------------------------------------------------- mask factories
# Each factory gets (T, S, Bn, nh) and returns the tensor given to PyTorch.
def m_causal_bool(T, S, Bn, nh):
    return causal_blocked(T, S)


def m_causal_float(T, S, Bn, nh):
    return to_float_mask(causal_blocked(T, S))


def m_local(left, right):
    return lambda T, S, Bn, nh: local_blocked(T, S, left, right)


def m_blocked(W):
    return lambda T, S, Bn, nh: blocked_window_blocked(T, S, W)


def m_3d_bool(T, S, Bn, nh):
    """(B*NH, T, S) bool; entry b*NH + h gets pattern number (b*NH + h) % 8 of the list below, so a
    kernel that reads the masks in another order (e.g. h*B + b) fails."""
    anti_causal = torch.tril(torch.ones(T, S, dtype=torch.bool), diagonal=-1)   # j >= i allowed
    pats = [causal_blocked(T, S),                # 0: causal
            local_blocked(T, S, 1, 1),           # 1: local (1, 1)
            anti_causal,                         # 2: anti-causal
            blocked_window_blocked(T, S, 2),     # 3: blocked W = 2
            local_blocked(T, S, 0, 0),           # 4: self only
            local_blocked(T, S, 2, 0),           # 5: local (2, 0)
            local_blocked(T, S, 0, 1),           # 6: local (0, 1)
            blocked_window_blocked(T, S, 3)]     # 7: blocked W = 3
    return torch.stack([pats[(b * nh + h) % len(pats)] for b in range(Bn) for h in range(nh)])


def m_3d_float(T, S, Bn, nh):
    """(B*NH, T, S) float; entry b*NH + h is an ALiBi-like bias with slope 0.25 * (1 + b*NH + h),
    plus -inf above the diagonal for odd entries (causal), finite elsewhere."""
    out = []
    for b in range(Bn):
        for h in range(nh):
            idx = b * nh + h
            m = alibi_like(T, S, 0.25 * (1 + idx))
            if idx % 2 == 1:
                m = m.masked_fill(causal_blocked(T, S), float("-inf"))
            out.append(m)
    return torch.stack(out)


def m_3d_bool_unbatched(T, S, Bn, nh):
    """Unbatched 3-D mask: (NH, T, S)."""
    return torch.stack([causal_blocked(T, S), local_blocked(T, S, 1, 0)][:nh])


def k_trailing(*pads):
    return lambda T, S, Bn, nh: kpm_trailing(Bn, S, pads)


def k_middle(T, S, Bn, nh):
    """batch 0: last two keys padded; batch 1: key 1 padded (padding need not be trailing)."""
    m = torch.zeros(Bn, S, dtype=torch.bool)
    m[0, S - 2:] = True
    m[1, 1] = True
    return m


def k_unbatched(T, S, Bn, nh):
    """Unbatched key_padding_mask: (S,), last key padded."""
    m = torch.zeros(S, dtype=torch.bool)
    m[S - 1] = True
    return m


# ----------------------------------------------------------------------------- configurations
def C(name, desc, **kw):
    c = dict(name=name, desc=desc, E=E, NH=NH, B=B, T=5, S=None, batch_first=False, kdim=None,
             vdim=None, bias=True, add_bias_kv=False, add_zero_attn=False, need_weights=True,
             average_attn_weights=True, attn_mask=None, kpm=None, same_qkv=False)
    c.update(kw)
    if c["S"] is None:
        c["S"] = c["T"]
    return c


CONFIGS = [
    C("no_mask", "plain self-shaped attention (distinct q, k, v), no masks, weights averaged over heads"),
    C("causal_bool", "causal as explicit bool attn_mask (T,S) = torch.triu(ones, 1), True = blocked",
      attn_mask=m_causal_bool),
    C("causal_float", "causal as float attn_mask (T,S): -inf above the diagonal, 0 elsewhere (added to scores)",
      attn_mask=m_causal_float),
    C("local_1_1", "local window (left,right)=(1,1) as explicit bool attn_mask, T=S=6",
      T=6, attn_mask=m_local(1, 1)),
    C("local_2_0", "local window (left,right)=(2,0) (causal sliding window) as explicit bool attn_mask, T=S=6",
      T=6, attn_mask=m_local(2, 0)),
    C("blocked_w2", "blocked (chunked) window W=2, T=S=5 (last block has 1 position), explicit bool attn_mask",
      T=5, attn_mask=m_blocked(2)),
    C("mask3d_bool", "3-D bool attn_mask (B*NH,T,S), entry b*NH+h: (0,0) causal, (0,1) local(1,1), "
      "(1,0) anti-causal, (1,1) blocked W=2; per-head weights", attn_mask=m_3d_bool, average_attn_weights=False),
    C("mask3d_float_kpm", "3-D float attn_mask (B*NH,T,S): ALiBi-like finite bias per b*NH+h, odd entries also "
      "causal -inf; plus bool key_padding_mask (float+bool merge path); per-head weights",
      attn_mask=m_3d_float, kpm=k_trailing(1, 0), average_attn_weights=False),
    C("key_padding", "bool key_padding_mask (B,S): batch 0 pads the last 2 keys, batch 1 pads key 1",
      kpm=k_middle),
    C("key_padding_causal", "bool key_padding_mask (trailing: 2 and 1 keys) + bool causal attn_mask (bool+bool merge)",
      attn_mask=m_causal_bool, kpm=k_trailing(2, 1)),
    C("key_padding_causal_float", "bool key_padding_mask (trailing: 1 and 2 keys) + float causal attn_mask "
      "(float+bool merge: masked_fill -inf)", attn_mask=m_causal_float, kpm=k_trailing(1, 2)),
    C("cross_t4_s6", "cross-attention T=4, S=6, no masks", T=4, S=6),
    C("cross_causal_t4_s6", "cross-attention T=4, S=6 with a top-left causal bool mask triu(ones(4,6),1) "
      "(key j allowed iff j<=i) and key padding (last key of batch 1)",
      T=4, S=6, attn_mask=m_causal_bool, kpm=k_trailing(0, 1)),
    C("kdim_vdim", "kdim=5, vdim=3 (separate q/k/v_proj_weight, packed in_proj_bias), cross T=4, S=6, "
      "key padding", T=4, S=6, kdim=5, vdim=3, kpm=k_trailing(2, 0)),
    C("add_bias_kv", "add_bias_kv: bias_k/bias_v appended as key/value position S (weights have S+1 columns)",
      add_bias_kv=True),
    C("add_bias_kv_masked", "add_bias_kv with causal bool attn_mask and key padding: masks get an allowed "
      "(False) column for the bias position", add_bias_kv=True, attn_mask=m_causal_bool, kpm=k_trailing(2, 1)),
    C("add_zero_attn", "add_zero_attn with key padding: a zero key/value appended after projection "
      "(weights have S+1 columns)", add_zero_attn=True, kpm=k_middle),
    C("bias_kv_zero_attn", "add_bias_kv and add_zero_attn together with a float causal mask: columns S "
      "(bias) and S+1 (zero), weights have S+2 columns; per-head weights", add_bias_kv=True,
      add_zero_attn=True, attn_mask=m_causal_float, average_attn_weights=False),
    C("unbatched", "unbatched input: query (T,E), key/value (S,E); weights (T,S)", B=0),
    C("unbatched_masked", "unbatched with 3-D bool attn_mask (NH,T,S) [(h0) causal, (h1) local(1,0)], "
      "key_padding_mask (S) (last key), per-head weights (NH,T,S), T=4, S=5",
      B=0, T=4, S=5, attn_mask=m_3d_bool_unbatched, kpm=k_unbatched, average_attn_weights=False),
    C("batch_first", "batch_first=True: query (B,T,E), key/value (B,S,E), cross T=4, S=5, key padding",
      batch_first=True, T=4, S=5, kpm=k_trailing(1, 2)),
    C("batch_first_causal", "batch_first=True self-shaped T=S=5 with bool causal mask, per-head weights",
      batch_first=True, attn_mask=m_causal_bool, average_attn_weights=False),
    C("no_weights", "need_weights=False (no weights.npy) with bool causal mask and key padding",
      need_weights=False, attn_mask=m_causal_bool, kpm=k_trailing(1, 0)),
    C("per_head_weights", "average_attn_weights=False: weights (B,NH,T,S), key padding",
      average_attn_weights=False, kpm=k_middle),
    C("no_bias", "bias=False: no in_proj_bias, no out_proj.bias; bool causal mask", bias=False,
      attn_mask=m_causal_bool),
    C("heads4", "NH=4 (head size 2), cross T=4, S=6, 3-D bool attn_mask (B*NH,T,S) with entry b*NH+h = pattern "
      "b*NH+h of: causal, local(1,1), anti-causal, blocked W=2, self only, local(2,0), local(0,1), blocked W=3; "
      "key padding (last 2 keys of batch 1); per-head weights",
      NH=4, T=4, S=6, attn_mask=m_3d_bool, kpm=k_trailing(0, 2), average_attn_weights=False),
    C("self_attn", "self-attention: query, key, value hold the same data (separate leaves); "
      "for mha(x,x,x) the gradient of x is d_query+d_key+d_value; causal bool mask",
      same_qkv=True, attn_mask=m_causal_bool),
]


# ----------------------------------------------------------------------------- helpers
def to_np(t):
    a = t.detach().cpu().numpy() if isinstance(t, torch.Tensor) else np.asarray(t)
    if a.dtype == np.bool_:
        a = a.astype("|b1")
    elif a.dtype.kind == "f":
        a = a.astype("<f8")
    elif a.dtype.kind in "iu":
        a = a.astype("<i8")
    else:
        raise TypeError(a.dtype)
    return np.ascontiguousarray(a)


def reference(cfg, q_in, k_in, v_in, params, attn_mask, kpm):
    """Independent float64 re-implementation of the documented conventions (explicit loops).
    Returns (out, weights) in PyTorch's output layout."""
    nh, e = cfg["NH"], cfg["E"]
    hs = e // nh
    unb = cfg["B"] == 0
    q, k, v = q_in, k_in, v_in
    if unb:
        q, k, v = q.unsqueeze(1), k.unsqueeze(1), v.unsqueeze(1)   # (L, 1, E)
    elif cfg["batch_first"]:
        q, k, v = q.transpose(0, 1), k.transpose(0, 1), v.transpose(0, 1)
    T, Bn, _ = q.shape
    S = k.shape[0]
    p = params
    bq = bk = bv = None
    if "in_proj_bias" in p:
        bq, bk, bv = p["in_proj_bias"].split(e)
    if "in_proj_weight" in p:
        wq, wk, wv = p["in_proj_weight"].split(e)
    else:
        wq, wk, wv = p["q_proj_weight"], p["k_proj_weight"], p["v_proj_weight"]

    def lin(x, w, b):
        y = x @ w.t()
        return y + b if b is not None else y

    Q, K, V = lin(q, wq, bq), lin(k, wk, bk), lin(v, wv, bv)          # (T|S, B, E)
    # allowed/additive mask per (b, h): start from zeros (S columns)
    add = torch.zeros(Bn, nh, T, S, dtype=torch.float64)
    if attn_mask is not None:
        am = attn_mask
        if am.dim() == 2:
            am = am.view(1, 1, T, S).expand(Bn, nh, T, S)
        else:
            am = am.view(Bn, nh, T, S)                                 # index b*NH + h
        add = add + (to_float_mask(am) if am.dtype == torch.bool else am)
    if kpm is not None:
        km = kpm.view(1, S) if unb else kpm
        add = add.masked_fill(km.view(Bn, 1, 1, S), float("-inf"))
    extra_k, extra_v = [], []
    if cfg["add_bias_kv"]:
        extra_k.append(p["bias_k"].view(1, 1, e).expand(1, Bn, e))
        extra_v.append(p["bias_v"].view(1, 1, e).expand(1, Bn, e))
    if cfg["add_zero_attn"]:
        extra_k.append(torch.zeros(1, Bn, e, dtype=torch.float64))
        extra_v.append(torch.zeros(1, Bn, e, dtype=torch.float64))
    if extra_k:
        K = torch.cat([K] + extra_k)
        V = torch.cat([V] + extra_v)
        add = torch.cat([add, torch.zeros(Bn, nh, T, len(extra_k), dtype=torch.float64)], dim=-1)
    Sx = K.shape[0]
    O = torch.zeros(T, Bn, e, dtype=torch.float64)
    P = torch.zeros(Bn, nh, T, Sx, dtype=torch.float64)
    for b in range(Bn):
        for h in range(nh):
            sl = slice(h * hs, (h + 1) * hs)
            qh = Q[:, b, sl] / math.sqrt(hs)
            sc = qh @ K[:, b, sl].t() + add[b, h]
            pr = torch.softmax(sc, dim=-1)
            P[b, h] = pr
            O[:, b, sl] = pr @ V[:, b, sl]
    out = lin(O, p["out_proj.weight"], p.get("out_proj.bias"))
    w = P.mean(dim=1) if cfg["average_attn_weights"] else P
    if unb:
        return out.squeeze(1), w.squeeze(0)
    if cfg["batch_first"]:
        out = out.transpose(0, 1)
    return out, w


def run_config(idx, cfg):
    seed = 1000 + idx
    torch.manual_seed(seed)
    nh, e = cfg["NH"], cfg["E"]
    mha = torch.nn.MultiheadAttention(e, nh, dropout=0.0, bias=cfg["bias"], add_bias_kv=cfg["add_bias_kv"],
                                      add_zero_attn=cfg["add_zero_attn"], kdim=cfg["kdim"], vdim=cfg["vdim"],
                                      batch_first=cfg["batch_first"]).double()
    mha.train()  # dropout is 0; training mode (and requires_grad) keeps PyTorch off the fused fast path
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        # PyTorch initialises in_proj_bias and out_proj.bias to zero; give them random values so the
        # fixtures also check that the biases are added (docs/mha_fixtures.md, "Parameters").
        if mha.in_proj_bias is not None:
            mha.in_proj_bias.copy_(0.2 * torch.randn(mha.in_proj_bias.shape, generator=g, dtype=torch.float64))
        if mha.out_proj.bias is not None:
            mha.out_proj.bias.copy_(0.2 * torch.randn(mha.out_proj.bias.shape, generator=g, dtype=torch.float64))
    params = dict(mha.named_parameters())
    assert set(params) == set(mha.state_dict()), (set(params), set(mha.state_dict()))

    T, S, Bn = cfg["T"], cfg["S"], cfg["B"]
    kdim = cfg["kdim"] or e
    vdim = cfg["vdim"] or e

    def shape(L, D):
        if Bn == 0:
            return (L, D)
        return (Bn, L, D) if cfg["batch_first"] else (L, Bn, D)

    def rnd(*s):
        return torch.randn(*s, generator=g, dtype=torch.float64)

    if cfg["same_qkv"]:
        x = rnd(*shape(T, e))
        query, key, value = [x.clone().requires_grad_() for _ in range(3)]
    else:
        query = rnd(*shape(T, e)).requires_grad_()
        key = rnd(*shape(S, kdim)).requires_grad_()
        value = rnd(*shape(S, vdim)).requires_grad_()
    bn_eff = max(Bn, 1)
    attn_mask = cfg["attn_mask"](T, S, bn_eff, nh) if cfg["attn_mask"] else None
    kpm = cfg["kpm"](T, S, bn_eff, nh) if cfg["kpm"] else None

    out, weights = mha(query, key, value, key_padding_mask=kpm, need_weights=cfg["need_weights"],
                       attn_mask=attn_mask, average_attn_weights=cfg["average_attn_weights"])
    d_out = rnd(*out.shape)
    out.backward(d_out)

    # ---- checks: no NaN (no fully masked rows), weights are distributions, reference agrees
    tensors = [out, d_out, query.grad, key.grad, value.grad] + [p.grad for p in params.values()]
    if weights is not None:
        tensors.append(weights)
    for t in tensors:
        assert t is not None and torch.isfinite(t).all(), cfg["name"]
    leaves = {n: t.detach().clone().requires_grad_() for n, t in
              [("query", query), ("key", key), ("value", value)] + list(params.items())}
    ref_out, ref_w = reference(cfg, leaves["query"], leaves["key"], leaves["value"],
                               {n: leaves[n] for n in params}, attn_mask, kpm)
    ref_out.backward(d_out)
    for n, t in [("query", query), ("key", key), ("value", value)] + list(params.items()):
        diff = (leaves[n].grad - t.grad).abs().max().item()
        assert diff < 1e-12, (cfg["name"], "d_" + n, diff)
        MAXDIFF[0] = max(MAXDIFF[0], diff)
    ref_out, ref_w = ref_out.detach(), ref_w.detach()
    assert (ref_out - out).abs().max() < 1e-12, (cfg["name"], (ref_out - out).abs().max())
    MAXDIFF[0] = max(MAXDIFF[0], (ref_out - out).abs().max().item())
    if weights is not None:
        assert weights.shape == ref_w.shape, (cfg["name"], weights.shape, ref_w.shape)
        assert (ref_w - weights).abs().max() < 1e-12, cfg["name"]
        MAXDIFF[0] = max(MAXDIFF[0], (ref_w - weights).abs().max().item())
        assert torch.allclose(weights.sum(-1), torch.ones((), dtype=torch.float64), atol=1e-12)
    if cfg["same_qkv"]:
        # one tensor passed three times (PyTorch's packed self-attention path) gets the summed gradient
        xs = query.detach().clone().requires_grad_()
        mha2 = torch.nn.MultiheadAttention(e, nh, bias=cfg["bias"], batch_first=cfg["batch_first"]).double()
        mha2.load_state_dict(mha.state_dict())
        o2, _ = mha2(xs, xs, xs, attn_mask=attn_mask, key_padding_mask=kpm, need_weights=cfg["need_weights"])
        o2.backward(d_out)
        assert (o2 - out).abs().max() < 1e-12
        assert (xs.grad - (query.grad + key.grad + value.grad)).abs().max() < 1e-12

    # ---- the file's tensors
    tensors = {"query": query, "key": key, "value": value}
    if attn_mask is not None:
        tensors["attn_mask"] = attn_mask
    if kpm is not None:
        tensors["key_padding_mask"] = kpm
    tensors.update(params)
    tensors["out"] = out
    if weights is not None:
        tensors["weights"] = weights
    tensors.update({"d_out": d_out, "d_query": query.grad, "d_key": key.grad, "d_value": value.grad})
    tensors.update({"d_" + n: p.grad for n, p in params.items()})

    s_attn = S + int(cfg["add_bias_kv"]) + int(cfg["add_zero_attn"])
    am_kind = "none" if attn_mask is None else ("bool" if attn_mask.dtype == torch.bool else "float")
    masks = [m for m, present in (("attn_mask", attn_mask is not None), ("key_padding_mask", kpm is not None))
             if present]
    lines = [
        ("name", cfg["name"]),
        ("embed_dim", e),
        ("num_heads", nh),
        ("head_dim", e // nh),
        ("batch_first", int(cfg["batch_first"])),
        ("kdim", kdim),
        ("vdim", vdim),
        ("bias", int(cfg["bias"])),
        ("add_bias_kv", int(cfg["add_bias_kv"])),
        ("add_zero_attn", int(cfg["add_zero_attn"])),
        ("dropout", 0),
        ("need_weights", int(cfg["need_weights"])),
        ("average_attn_weights", int(cfg["average_attn_weights"])),
        ("B", Bn),
        ("T", T),
        ("S", S),
        ("S_attn", s_attn),
        ("masks", ",".join(masks) if masks else "none"),
        ("attn_mask", am_kind),
        ("attn_mask_dims", 0 if attn_mask is None else attn_mask.dim()),
        ("key_padding_mask", "none" if kpm is None else "bool"),
        ("same_qkv", int(cfg["same_qkv"])),
        ("seed", seed),
        ("params", ",".join(params)),
        ("description", cfg["desc"]),
    ]
    meta = dict(lines)
    meta["index"] = ",".join(c["name"] for c in CONFIGS)
    fixture_io.write(fixture_io.case_path(OUT, "mha", cfg["name"]),
                     {n: to_np(t) for n, t in tensors.items()}, meta)
    return cfg["name"]


def main():
    global OUT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=OUT, help="fixtures root (default: tests/fixtures)")
    OUT = ap.parse_args().out
    torch.set_num_threads(1)  # keep reductions in one fixed order
    names = [c["name"] for c in CONFIGS]
    assert len(names) == len(set(names))
    shutil.rmtree(os.path.join(OUT, "mha"), ignore_errors=True)
    for i, cfg in enumerate(CONFIGS):
        run_config(i, cfg)
    print(f"wrote {len(names)} configurations to {os.path.join(OUT, 'mha')}; max |PyTorch - reference| = {MAXDIFF[0]:.3g}")


if __name__ == "__main__":
    main()
