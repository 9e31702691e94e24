#!/usr/bin/python3
"""tools/make_integer_fixtures.py — PyTorch 1.13's values for tests/ops/test_integer_ops.cpp: the
division family at special values (fmod, remainder, floor and trunc division, with ±inf divisors),
pow at -0 and other special bases, int64 arithmetic (true, floor and trunc division, fmod,
remainder, pow, the rounding ops), int64 linspace, the bitwise ops and shifts, hardtanh with a
NaN bound. One file per case, tests/fixtures/integer/<name>.safetensors (tools/fixture_io.py);
every tensor keeps torch's dtype, so the test checks dtypes as well as values.

Run with Debian's torch (1.13, CPU):  /usr/bin/python3 tools/make_integer_fixtures.py [--out DIR]
Cases and their tensors:
  divmod_f32, divmod_f64  a, b (every pair of the special values, flattened); fmod, remainder,
      floor (div rounding_mode="floor"), trunc; d<op>_da, d<op>_db: gradients for dout = ones
  pow_f32, pow_f64  x (special bases), e (exponents), pow_t (E, X): pow(x, e[i] as a tensor),
      pow_s (E, X): pow(x, e[i] as a number), dpow_s (E, X): its gradient for dout = ones
  int_div  a, b (int64, b without 0); true, floor, trunc, floor_divide, fmod, remainder; the number
      forms <op>_s<k> with the numbers of metadata "scalars" (k its index)
  int_pow  a, e (int64, negative exponents and overflow included); pow; pow_s<k> for "scalars"
  int_round  x; floor, ceil, round, trunc
  linspace  l<k> for the (start, end, steps) of metadata "cases" (k its index), dtype int64;
      cases where PyTorch's scalar and vectorised loops agree (see linspace_case)
  bitwise  a (4, 1), b (5), int64; and, or, xor, not_a (broadcast); sa (5), sb (5): shl, shr with
      counts 0..63; the number forms and_s, or_s, xor_s, shl_s, shr_s (number 3); bool p, q (2, 2)
      and pand, por, pxor, pnot; bool p with the number 1: pand_s (int64)
  int_arith  a, b (int64, INT64_MIN / INT64_MAX / -1 / 0 and overflowing pairs); add, sub, mul,
      neg_a, abs_a, sign_a; the number forms add_s<k>, sub_s<k>, rsub_s<k> (number - a), mul_s<k>
      for the numbers of metadata "scalars" (integers: int64, wrapping; others: float32); bool p
      (4), q (4): padd, pmul (bool), psign (sign of p), padd_s<k>, pmul_s<k>
  hardtanh_nan  x (80, float64); lo_nan, hi_nan: values, dlo_nan, dhi_nan: gradients (dout = ones)
Out-of-range shift counts, INT64_MIN / -1 and division by 0 are not here: PyTorch 1.13's values
there are undefined behaviour or a crash (the test spells out tapegrad's defined answers).
"""
import argparse
import math
import os
import shutil

import torch
import torch.nn.functional as F

import fixture_io

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, "..", "tests", "fixtures"))
INF, NAN = math.inf, math.nan
I64 = torch.int64


def save(name, tensors, meta=None):
    fixture_io.write(fixture_io.case_path(OUT, "integer", name), tensors, meta)


def specials(dt):
    fi = torch.finfo(dt)
    return [0.0, -0.0, 1.0, -1.0, 2.5, -2.5, 0.7, 3.0, 1e17 if dt == torch.float64 else 1e10,
            fi.tiny / 4, -fi.tiny / 4, fi.max, INF, -INF, NAN]


def grads(f, a, b):
    a = a.clone().requires_grad_()
    b = b.clone().requires_grad_()
    y = f(a, b)
    da, db = torch.autograd.grad(y, [a, b], torch.ones_like(y), allow_unused=True)
    return y.detach(), da, db


def divmod_case(dt, name):
    v = specials(dt)
    a = torch.tensor([x for x in v for _ in v], dtype=dt)
    b = torch.tensor([y for _ in v for y in v], dtype=dt)
    t = {"a": a, "b": b}
    ops = {"fmod": torch.fmod, "remainder": torch.remainder,
           "floor": lambda x, y: torch.div(x, y, rounding_mode="floor"),
           "trunc": lambda x, y: torch.div(x, y, rounding_mode="trunc")}
    for op, f in ops.items():
        y, da, db = grads(f, a, b)
        t[op], t[f"d{op}_da"], t[f"d{op}_db"] = y, da, db
    save(name, t)


def pow_case(dt, name):
    fi = torch.finfo(dt)
    x = torch.tensor([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, INF, -INF, NAN, fi.tiny / 4,
                      -fi.tiny / 4], dtype=dt)
    es = [-1.0, -2.0, -0.5, -INF, -1.5, -3.0, 0.5, 1.5, -0.25, INF, 2.0, 3.0, 0.0]
    pow_t, pow_s, dpow_s = [], [], []
    for e in es:
        pow_t.append(torch.pow(x, torch.full_like(x, e)))
        xr = x.clone().requires_grad_()
        y = torch.pow(xr, e)
        (g,) = torch.autograd.grad(y, [xr], torch.ones_like(y))
        pow_s.append(y.detach())
        dpow_s.append(g)
    save(name, {"x": x, "e": torch.tensor(es, dtype=dt), "pow_t": torch.stack(pow_t),
                "pow_s": torch.stack(pow_s), "dpow_s": torch.stack(dpow_s)})


def int_div_case():
    big = 2 ** 62
    a = torch.tensor([7, -7, 7, -7, 0, 5, -5, 9, -9, 2 ** 63 - 1, -2 ** 63, -2 ** 63, big, -big + 3,
                      1, -1], dtype=I64)
    b = torch.tensor([2, 2, -2, -2, 3, 1, 3, -4, 4, 2, 2, 3, -7, 5, 2 ** 63 - 1, -2 ** 63],
                     dtype=I64)
    t = {"a": a, "b": b, "true": a / b, "floor": torch.div(a, b, rounding_mode="floor"),
         "trunc": torch.div(a, b, rounding_mode="trunc"), "floor_divide": torch.floor_divide(a, b),
         "fmod": torch.fmod(a, b), "remainder": torch.remainder(a, b)}
    scalars = [3, -3, 2.5, -0.5]
    for k, s in enumerate(scalars):
        t[f"true_s{k}"] = a / s
        t[f"floor_s{k}"] = torch.div(a, s, rounding_mode="floor")
        t[f"trunc_s{k}"] = torch.div(a, s, rounding_mode="trunc")
        t[f"floor_divide_s{k}"] = torch.floor_divide(a, s)
        t[f"fmod_s{k}"] = torch.fmod(a, s)
        t[f"remainder_s{k}"] = torch.remainder(a, s)
    save("int_div", t, {"scalars": ",".join(repr(float(s)) for s in scalars)})


def int_pow_case():
    a = torch.tensor([7, -7, 7, -7, 0, 5, 0, 2, -2, 1, -1, -1, 3, 2, 2, -3, 10, 0], dtype=I64)
    e = torch.tensor([2, 3, 0, 1, 2, 3, -1, -1, -1, -5, -3, -4, 50, 63, 64, 39, 18, 0], dtype=I64)
    t = {"a": a, "e": e, "pow": torch.pow(a, e)}
    scalars = [0, 1, 2, 3, 5, 0.5, 2.5, -1.5]
    for k, s in enumerate(scalars):
        t[f"pow_s{k}"] = torch.pow(a, s)
    save("int_pow", t, {"scalars": ",".join(repr(float(s)) for s in scalars)})


def int_round_case():
    x = torch.tensor([0, 1, -1, 7, -7, 2 ** 63 - 1, -2 ** 63], dtype=I64)
    save("int_round", {"x": x, "floor": torch.floor(x), "ceil": torch.ceil(x),
                       "round": torch.round(x), "trunc": torch.trunc(x)})


def int_arith_case():
    lo, hi = -2 ** 63, 2 ** 63 - 1
    a = torch.tensor([lo, hi, -1, 0, 1, 7, -7, lo, hi, hi, lo, 2 ** 62, -2 ** 62, 3037000500, 5],
                     dtype=I64)
    b = torch.tensor([-1, 1, lo, hi, 0, -3, 3, lo, hi, -1, 1, 2, 2, 3037000500, -2 ** 40],
                     dtype=I64)
    t = {"a": a, "b": b, "add": a + b, "sub": a - b, "mul": a * b,
         "neg_a": torch.neg(a), "abs_a": torch.abs(a), "sign_a": torch.sign(a)}
    # Python ints stay int64 (-2**63 included); Python floats promote to float32
    scalars = [3, -3, 0, -1, lo, 2.5, -0.5, INF, -INF, NAN, 1e20]
    p = torch.tensor([True, False, True, False])
    q = torch.tensor([True, True, False, False])
    t.update({"p": p, "q": q, "padd": p + q, "pmul": p * q, "psign": torch.sign(p)})
    for k, s in enumerate(scalars):
        t[f"add_s{k}"], t[f"sub_s{k}"] = a + s, a - s
        t[f"rsub_s{k}"], t[f"mul_s{k}"] = s - a, a * s
        t[f"padd_s{k}"], t[f"pmul_s{k}"] = p + s, p * s
    save("int_arith", t, {"scalars": ",".join(repr(float(s)) for s in scalars)})


def linspace_case():
    cases = [(0, 10, 4), (-5, 5, 4), (10, 0, 4), (-10, -1, 4), (0, 1, 5), (-1, 1, 5), (1, -1, 7),
             (0.5, 9.5, 4), (-0.5, -9.5, 4), (-2.5, 2.5, 6), (-9.99, 9.99, 3), (0, 10, 1),
             (3.7, 3.7, 1), (-3.7, 4, 1), (0, 10, 0), (0, 10, 2), (0, 100, 101), (0, 2 ** 62, 3)]
    # Not (100, -3, 50): from 8 values on PyTorch's vectorised loop truncates one base per vector
    # and adds k·step to it, so a value depends on its position and the CPU's vector width; the
    # test checks such a case against the scalar formula, which every element follows here.
    t = {f"l{k}": torch.linspace(s, e, n, dtype=I64) for k, (s, e, n) in enumerate(cases)}
    save("linspace", t, {"cases": ";".join(f"{float(s)!r},{float(e)!r},{n}" for s, e, n in cases)})


def bitwise_case():
    a = torch.tensor([[12], [-12], [5], [0]], dtype=I64)
    b = torch.tensor([10, 3, -1, 7, -2 ** 63], dtype=I64)
    sa = torch.tensor([1, -1, 5, -8, 2 ** 62, -2 ** 63, 3, -3, 123456789], dtype=I64)
    sb = torch.tensor([0, 1, 63, 3, 1, 63, 62, 2, 17], dtype=I64)
    p = torch.tensor([[True, True], [False, False]])
    q = torch.tensor([True, False])
    save("bitwise", {
        "a": a, "b": b, "and": a & b, "or": a | b, "xor": a ^ b, "not_a": ~a,
        "sa": sa, "sb": sb, "shl": torch.bitwise_left_shift(sa, sb),
        "shr": torch.bitwise_right_shift(sa, sb),
        "and_s": torch.bitwise_and(b, 3), "or_s": torch.bitwise_or(b, 3),
        "xor_s": torch.bitwise_xor(b, 3), "shl_s": torch.bitwise_left_shift(sa, 3),
        "shr_s": torch.bitwise_right_shift(sa, 3),
        "p": p, "q": q, "pand": p & q, "por": p | q, "pxor": p ^ q, "pnot": ~p,
        "pand_s": torch.bitwise_and(p, 1)})


def hardtanh_case():
    # 80 elements: PyTorch's vectorised path, the one long tensors take
    x = torch.linspace(-3, 3, 80, dtype=torch.float64)
    x[7] = NAN
    t = {"x": x}
    for name, lo, hi in [("lo_nan", NAN, 1.0), ("hi_nan", -1.0, NAN)]:
        xr = x.clone().requires_grad_()
        y = F.hardtanh(xr, lo, hi)
        (g,) = torch.autograd.grad(y, [xr], torch.ones_like(y))
        t[name], t["d" + name] = y.detach(), g
    save("hardtanh_nan", t)


def main():
    global OUT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=OUT, help="fixtures root (default: tests/fixtures)")
    OUT = ap.parse_args().out
    shutil.rmtree(os.path.join(OUT, "integer"), ignore_errors=True)
    assert torch.get_default_dtype() == torch.float32  # true division's result dtype
    divmod_case(torch.float32, "divmod_f32")
    divmod_case(torch.float64, "divmod_f64")
    pow_case(torch.float32, "pow_f32")
    pow_case(torch.float64, "pow_f64")
    int_div_case()
    int_pow_case()
    int_round_case()
    int_arith_case()
    linspace_case()
    bitwise_case()
    hardtanh_case()
    print("wrote", sorted(os.listdir(os.path.join(OUT, "integer"))))


if __name__ == "__main__":
    main()
