#!/usr/bin/python3
"""tools/make_higher_order_fixtures.py — PyTorch reference values for tests/ops/test_functional.cpp:
Hessian-vector products and Hessians of a small model's loss, float64, through
torch.autograd.functional (PyTorch's composed path is differentiable twice).

Run with Debian's torch (1.13, CPU):  /usr/bin/python3 tools/make_higher_order_fixtures.py [--out DIR]
Files under tests/fixtures/higher_order/ (tensors in brackets):
  mlp.safetensors  the model loss = cross_entropy(linear(gelu(linear(layer_norm(x; ln_w, ln_b);
                   W1, b1)); W2), target):
                   [x, target, ln_w, ln_b, W1, b1, W2] its inputs and parameters,
                   [loss] the loss,
                   [v_<p>, hvp_<p>] for every parameter p: a seeded direction and H·v (all
                   parameters at once), [H_ln_w_ln_w, H_ln_w_W2, H_W2_W2] three Hessian blocks.
Everything is seeded, so reruns give the same bytes.
"""
import argparse
import os

import torch
import torch.nn.functional as F
from torch.autograd.functional import hessian, hvp

import fixture_io

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, "..", "tests", "fixtures"))
NAMES = ["ln_w", "ln_b", "W1", "b1", "W2"]


def randn(*shape, seed, scale=1.0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(*shape, generator=g, dtype=torch.float64) * scale


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=OUT)
    args = ap.parse_args()
    x = randn(5, 6, seed=1)
    target = torch.tensor([0, 2, 1, 1, 0])
    params = [1.0 + randn(6, seed=2, scale=0.1), randn(6, seed=3, scale=0.1),
              randn(8, 6, seed=4, scale=0.4), randn(8, seed=5, scale=0.1),
              randn(3, 8, seed=6, scale=0.4)]

    def loss(ln_w, ln_b, W1, b1, W2):
        h = F.gelu(F.linear(F.layer_norm(x, (6,), ln_w, ln_b), W1, b1))
        return F.cross_entropy(F.linear(h, W2), target)

    v = [randn(*p.shape, seed=10 + i) for i, p in enumerate(params)]
    value, hv = hvp(loss, tuple(params), tuple(v))
    H = hessian(loss, tuple(params))
    out = {"x": x, "target": target, "loss": value}
    for name, p, vi, hvi in zip(NAMES, params, v, hv):
        out[name] = p
        out["v_" + name] = vi
        out["hvp_" + name] = hvi
    out["H_ln_w_ln_w"] = H[0][0]
    out["H_ln_w_W2"] = H[0][4]
    out["H_W2_W2"] = H[4][4]
    fixture_io.write(fixture_io.case_path(args.out, "higher_order", "mlp"),
                     {k: fixture_io.to_numpy(t) for k, t in out.items()},
                     {"model": "layer_norm -> linear -> gelu -> linear -> cross_entropy"})


if __name__ == "__main__":
    main()
