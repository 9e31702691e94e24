"""tools/make_half_fixtures_rows.py — PyTorch 1.13's results for the row-wise ops (softmax,
log_softmax, layer_norm, rms_norm, cross_entropy, rotary) on bfloat16 and float16 inputs, as
tests/fixtures/half_rows/<case>.safetensors for tests/ops/test_half_{softmax,norm,loss,rotary}.cpp.
Run with Debian's /usr/bin/python3 (torch 1.13):
    /usr/bin/python3 tools/make_half_fixtures_rows.py
Per case, tensors hold values of the reduced type stored as float32 (exact):
  x, dout, ...      inputs: bfloat16 values (x16, dout16, ...: float16 values)
  bf_<out>          PyTorch's bfloat16 kernel on the bfloat16 inputs (where 1.13 has one)
  r_<out>           PyTorch's float32 result on the same bfloat16 inputs, rounded once to bfloat16
  h_<out>           PyTorch's float32 result on the float16 inputs, rounded once with .half()
                    (1.13 has no CPU float16 kernels)
softmax's and log_softmax's backward references (r_, h_) apply the float32 formula to the output
rounded to the reduced type, since that is what a reduced-type backward saves and reads.
Mixed layer norm (bfloat16 x, float32 weight and bias) raises in 1.13: its reference is the
float32 result, out and dx rounded once to bfloat16, dweight and dbias kept in float32.
Not here: the optimizer entries (tests/ops/test_half_optim.cpp checks them against tapegrad's
float32 step, which tests/nn checks against PyTorch).
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
import fixture_io  # noqa: E402

OUT = os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures")
LENGTHS = [1, 15, 16, 17, 1023, 1027]  # vector bodies and every tail (16 floats, 32 halves)
INDEX = []


def bf(t):
    return t.to(torch.bfloat16).float()


def hf(t):
    return t.half().float()


def write(case, tensors, meta=None):
    INDEX.append(case)
    m = {"index": "", "torch": torch.__version__}
    m.update(meta or {})
    fixture_io.write(fixture_io.case_path(OUT, "half_rows", case),
                     {k: v.detach().float().contiguous() for k, v in tensors.items()}, m)


def run(f, inputs, dout):
    """f(*inputs) and the gradients of its inputs that require grad, for upstream dout."""
    leaves = [t.detach().clone().requires_grad_(t.is_floating_point()) for t in inputs]
    y = f(*leaves)
    grads = torch.autograd.grad(y, [t for t in leaves if t.requires_grad], dout)
    return [y] + list(grads)


def three_ways(f, names, inputs_bf, inputs_h, dout_bf, dout_h, with_bf=True):
    """{bf_n, r_n, h_n} for each output name: f in bfloat16, in float32 rounded once to bfloat16,
    and in float32 on the float16 inputs rounded once to float16."""
    out = {}
    if with_bf:
        res = run(f, [t.to(torch.bfloat16) if t.is_floating_point() else t for t in inputs_bf],
                  dout_bf.to(torch.bfloat16))
        out.update({"bf_" + n: r for n, r in zip(names, res)})
    res = run(f, inputs_bf, dout_bf)
    out.update({"r_" + n: bf(r) for n, r in zip(names, res)})
    res = run(f, inputs_h, dout_h)
    out.update({"h_" + n: hf(r) for n, r in zip(names, res)})
    return out


def softmax_refs(t, x, x16, d, d16, dim):
    """PyTorch's bfloat16 kernels (bf_), and its float32 softmax / log_softmax rounded once (r_,
    h_) with the backward formula of the float32 kernels applied in float32 to the ROUNDED output
    (what a reduced-type backward saves, PyTorch's too) and rounded once."""
    for op, f in (("sm", F.softmax), ("lsm", F.log_softmax)):
        y, dx = run(lambda a: f(a, dim), [x.to(torch.bfloat16)], d.to(torch.bfloat16))
        t["bf_" + op], t["bf_" + op + "_dx"] = y, dx
        for pre, xx, dd, rnd in (("r_", x, d, bf), ("h_", x16, d16, hf)):
            yr = rnd(f(xx, dim))
            if op == "sm":
                dx = yr * (dd - (dd * yr).sum(dim, keepdim=True))
            else:
                dx = dd - torch.exp(yr) * dd.sum(dim, keepdim=True)
            t[pre + op], t[pre + op + "_dx"] = yr, rnd(dx)


def softmax_cases(g):
    for D in LENGTHS:
        rows = 3 if D < 1000 else 1
        x, x16 = bf(torch.randn(rows, D, generator=g) * 3), hf(torch.randn(rows, D, generator=g) * 3)
        d, d16 = bf(torch.randn(rows, D, generator=g)), hf(torch.randn(rows, D, generator=g))
        t = {"x": x, "x16": x16, "dout": d, "dout16": d16}
        softmax_refs(t, x, x16, d, d16, -1)
        write(f"softmax_D{D}", t, {"dim": -1})
    # over dim 0 of (17, 5): columns gathered at a stride
    x, x16 = bf(torch.randn(17, 5, generator=g) * 3), hf(torch.randn(17, 5, generator=g) * 3)
    d, d16 = bf(torch.randn(17, 5, generator=g)), hf(torch.randn(17, 5, generator=g))
    t = {"x": x, "x16": x16, "dout": d, "dout16": d16}
    softmax_refs(t, x, x16, d, d16, 0)
    write("softmax_dim0", t, {"dim": 0})


def special_rows(D, big):
    """Rows of length D with -inf entries, a +inf, a NaN, and large logits (big and -big)."""
    inf, nan = float("inf"), float("nan")
    base = torch.linspace(-2, 2, D)
    rows = [base.clone() for _ in range(5)]
    rows[0][::3] = -inf           # a partly masked row
    rows[1][D // 2] = inf         # +inf: NaN everywhere (inf - inf)
    rows[2][1] = nan              # NaN: the row is NaN
    rows[3][::2] = big            # large logits
    rows[3][1::4] = -big
    rows[4][0] = big              # one large logit dominates
    return torch.stack(rows)


def softmax_special(g):
    for D in (17, 33):
        x, x16 = bf(special_rows(D, 3.0e38)), hf(special_rows(D, 6.0e4))
        d, d16 = bf(torch.randn(5, D, generator=g)), hf(torch.randn(5, D, generator=g))
        t = {"x": x, "x16": x16, "dout": d, "dout16": d16}
        softmax_refs(t, x, x16, d, d16, -1)
        write(f"softmax_special_D{D}", t, {"dim": -1})


def norm_cases(g):
    for D in [3, 15, 16, 17, 1027]:  # (D = 1, 2: out is ±1·w + b exactly and dx 0: no reference)
        N = 4 if D < 1000 else 1
        x, x16 = bf(torch.randn(N, D, generator=g) * 2 + 1), hf(torch.randn(N, D, generator=g) * 2 + 1)
        w, w16 = bf(torch.randn(D, generator=g)), hf(torch.randn(D, generator=g))
        b, b16 = bf(torch.randn(D, generator=g)), hf(torch.randn(D, generator=g))
        d, d16 = bf(torch.randn(N, D, generator=g)), hf(torch.randn(N, D, generator=g))
        t = {"x": x, "w": w, "b": b, "dout": d, "x16": x16, "w16": w16, "b16": b16, "dout16": d16}
        ln = lambda a, ww, bb: F.layer_norm(a, (D,), ww, bb, 1e-5)  # noqa: E731
        t.update(three_ways(ln, ["ln", "ln_dx", "ln_dw", "ln_db"], [x, w, b], [x16, w16, b16], d, d16))
        # mixed: bfloat16 x, float32 weight and bias (raises in 1.13): float32, out and dx rounded once
        wf, bf32 = torch.randn(D, generator=g), torch.randn(D, generator=g)
        y, dx, dw, db = run(ln, [x, wf, bf32], d)
        t.update({"wf": wf, "bf": bf32, "m_ln": bf(y), "m_ln_dx": bf(dx), "m_ln_dw": dw, "m_ln_db": db})
        # RMSNorm: 1.13 has none; float32 composed (torch.nn.functional.rms_norm's formula), rounded once
        rms = lambda a, ww: a * torch.rsqrt(a.pow(2).mean(-1, keepdim=True) + 1e-6) * ww  # noqa: E731
        t.update(three_ways(rms, ["rms", "rms_dx", "rms_dw"], [x, w], [x16, w16], d, d16, False))
        write(f"norm_D{D}", t, {"eps": 1e-5, "rms_eps": 1e-6})


def ce_cases(g):
    for C in [1, 15, 16, 17, 1027]:
        N = 6 if C < 1000 else 2
        x, x16 = bf(torch.randn(N, C, generator=g) * 4), hf(torch.randn(N, C, generator=g) * 4)
        tgt = torch.randint(0, C, (N,), generator=g)
        d, d16 = bf(torch.randn(N, generator=g)), hf(torch.randn(N, generator=g))
        t = {"x": x, "x16": x16, "target": tgt, "dout": d, "dout16": d16}
        ce = lambda a, tt: F.cross_entropy(a, tt, reduction="none")  # noqa: E731
        t.update(three_ways(ce, ["ce", "ce_dx"], [x, tgt], [x16, tgt], d, d16))
        cem = lambda a, tt: F.cross_entropy(a, tt)  # noqa: E731
        one = torch.tensor(1.0)
        t.update(three_ways(cem, ["cem", "cem_dx"], [x, tgt], [x16, tgt], one, one))
        t["target"] = tgt.double()  # stored as float (the fixture has no int32); read back as int64
        write(f"ce_C{C}", t)
    # special values: -inf (not at the target), large logits, a NaN row; C = 33
    C = 33
    x, x16 = bf(special_rows(C, 3.0e38)), hf(special_rows(C, 6.0e4))
    x[1], x16[1] = bf(torch.linspace(-2, 2, C)), hf(torch.linspace(-2, 2, C))  # no +inf row
    x[1][5], x16[1][5] = 1.0e30, 6.0e4
    # many equal maxima: log(count) must survive lse = max + log Σ, kept in float64 (so up to ~1e13)
    x[3] = bf(special_rows(C, 1.0e4)[3])
    tgt = torch.tensor([1, 7, 2, 4, 0])
    d, d16 = bf(torch.randn(5, generator=g)), hf(torch.randn(5, generator=g))
    t = {"x": x, "x16": x16, "target": tgt.double(), "dout": d, "dout16": d16}
    ce = lambda a, tt: F.cross_entropy(a, tt, reduction="none")  # noqa: E731
    t.update(three_ways(ce, ["ce", "ce_dx"], [x, tgt], [x16, tgt], d, d16))
    write("ce_special", t)


def rotary_cases(g):
    def rot(a, c, s):  # Hugging Face's rotate_half form, half-split, R = D
        h = a.shape[-1] // 2
        cc, ss = torch.cat([c, c], -1), torch.cat([s, s], -1)
        return a * cc + torch.cat([-a[..., h:], a[..., :h]], -1) * ss

    for D in (16, 34, 64):
        B, T = 2, 5
        x, x16 = bf(torch.randn(B, T, D, generator=g)), hf(torch.randn(B, T, D, generator=g))
        ang = torch.arange(T).float()[:, None] / 10000 ** (torch.arange(D // 2).float() / (D // 2))
        c, s = torch.cos(ang), torch.sin(ang)
        d, d16 = bf(torch.randn(B, T, D, generator=g)), hf(torch.randn(B, T, D, generator=g))
        t = {"x": x, "x16": x16, "cos": c, "sin": s, "cos_bf": bf(c), "sin_bf": bf(s),
             "cos16": hf(c), "sin16": hf(s), "dout": d, "dout16": d16}
        f = lambda a: rot(a, c, s)  # noqa: E731 (float32 tables, as nn::RotaryEmbedding keeps)
        t.update(three_ways(f, ["rot", "rot_dx"], [x], [x16], d, d16, False))
        cb, sb = c.to(torch.bfloat16), s.to(torch.bfloat16)
        y, dx = run(lambda a: rot(a, cb, sb), [x.to(torch.bfloat16)], d.to(torch.bfloat16))
        t.update({"bf_rot": y, "bf_rot_dx": dx})  # all bfloat16, tables too: 1.13's composed form
        write(f"rotary_D{D}", t)


def main():
    global OUT
    OUT = fixture_io.out_root()
    g = torch.Generator().manual_seed(20261206)
    softmax_cases(g)
    softmax_special(g)
    norm_cases(g)
    ce_cases(g)
    rotary_cases(g)
    # the index key of every case lists them all (tests/fixtures.hpp's fixture_index)
    index = ",".join(INDEX)
    for case in INDEX:
        path = fixture_io.case_path(OUT, "half_rows", case)
        tensors, meta = fixture_io.read(path)
        meta["index"] = index
        fixture_io.write(path, tensors, meta)
    print(f"half_rows: {len(INDEX)} cases")


if __name__ == "__main__":
    main()
