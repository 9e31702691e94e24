#!/usr/bin/python3
"""tools/make_special_values.py — PyTorch 1.13's values of the elementwise ops at special values,
for tests/ops/test_special_values.cpp, which checks its table of references against them.

Run with Debian's torch (1.13, CPU):  /usr/bin/python3 tools/make_special_values.py
Writes tests/fixtures/special_values.txt, one line per case, every number the shortest decimal that reads back exactly:
  un  <dtype> <op> <x> <y> <dy/dx>
  bin <dtype> <op> <a> <b> <y> <dy/da> <dy/db>
Each op runs once over a tensor of all its cases (67 or more elements: PyTorch's vector path).
The op names are the test table's.
"""
import math
import os

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "tests", "fixtures", "special_values.txt")
INF, NAN = math.inf, math.nan


def specials(dt):
    fi = torch.finfo(dt)
    f32 = dt == torch.float32
    v = [0.0, -0.0, 1.0, -1.0, 0.5, -0.5, 2.0, -2.0, 3.0, 0.7, -1.3, 20.0, -20.0, INF, -INF, NAN,
         fi.tiny / 4, -fi.tiny / 4, fi.tiny, fi.max, -fi.max, 1e-30]
    v += [88.5, 89.0, -87.0, -100.0, -104.0, -110.0] if f32 else [709.5, 710.0, -707.0, -740.0,
                                                                  -745.5, -800.0]
    return v


def pair_specials(dt):
    fi = torch.finfo(dt)
    return [0.0, -0.0, 1.0, -1.0, 0.5, 2.0, -2.0, 3.0, INF, -INF, NAN, fi.tiny / 4, -fi.tiny / 4,
            fi.max]


def powf(e):
    return lambda x: x ** e


UNARY = {
    "neg": torch.neg, "exp": torch.exp, "log": torch.log, "sqrt": torch.sqrt,
    "rsqrt": torch.rsqrt, "abs": torch.abs, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
    "relu": torch.relu, "gelu": F.gelu, "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "add_s": lambda x: x + 1.5, "mul_s": lambda x: x * -2.5, "rsub_s": lambda x: 1.5 - x,
    "rdiv_s": lambda x: 2.0 / x,
    **{f"pow{e!r}": powf(e) for e in [0.0, 1.0, 2.0, 3.0, 0.5, -0.5, -1.0, -2.0, 0.3, 2.5, -1.5,
                                       4.0]},
    "clamp": lambda x: torch.clamp(x, -1.0, 2.0), "clamp_0": lambda x: torch.clamp(x, 0.0, 0.5),
    "clamp_min": lambda x: torch.clamp_min(x, 0.5), "clamp_max": lambda x: torch.clamp_max(x, -0.5),
    **{n: getattr(torch, n) for n in ["sin", "cos", "tan", "asin", "acos", "atan", "sinh", "cosh",
                                       "asinh", "acosh", "atanh", "erf", "erfc", "exp2", "expm1",
                                       "log2", "log10", "log1p", "floor", "ceil", "round", "trunc",
                                       "sign"]},
    "silu": F.silu, "softplus": F.softplus,
    "softplus_b2_t1": lambda x: F.softplus(x, beta=2.0, threshold=1.0),
    "leaky_relu": F.leaky_relu, "elu": F.elu, "elu_a0.5": lambda x: F.elu(x, alpha=0.5),
    "selu": F.selu, "celu": lambda x: F.celu(x, alpha=0.5), "mish": F.mish,
    "hardswish": F.hardswish, "hardsigmoid": F.hardsigmoid, "hardtanh": F.hardtanh,
    "relu6": F.relu6, "logsigmoid": F.logsigmoid, "softsign": F.softsign, "sinc": torch.sinc,
}
BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "pow": torch.pow,
    "maximum": torch.maximum, "minimum": torch.minimum,
}


def h(v):
    """The shortest decimal that reads back as the same value of v's dtype."""
    if v.dtype == torch.float32:
        return str(np.float32(v.item()))
    return repr(v.item())


def main():
    lines = []
    for dt, name in [(torch.float32, "float32"), (torch.float64, "float64")]:
        sp = specials(dt)
        for op, f in UNARY.items():
            x = torch.tensor(sp * 3, dtype=dt, requires_grad=True)
            y = f(x)
            y.backward(torch.ones_like(y))
            for i in range(len(sp)):
                lines.append(f"un {name} {op} {h(x[i])} {h(y[i])} {h(x.grad[i])}")
        ps = pair_specials(dt)
        av = [a for a in ps for _ in ps]
        bv = [b for _ in ps for b in ps]
        for op, f in BINARY.items():
            a = torch.tensor(av, dtype=dt, requires_grad=True)
            b = torch.tensor(bv, dtype=dt, requires_grad=True)
            y = f(a, b)
            y.backward(torch.ones_like(y))
            for i in range(len(av)):
                lines.append(f"bin {name} {op} {h(a[i])} {h(b[i])} {h(y[i])} {h(a.grad[i])} "
                             f"{h(b.grad[i])}")
    with open(OUT, "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print(f"wrote {len(lines)} cases to {os.path.relpath(OUT)}")


if __name__ == "__main__":
    main()
