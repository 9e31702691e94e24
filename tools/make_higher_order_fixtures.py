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
  mha.safetensors  the issue's model: loss = cross_entropy(linear(mean_T(gelu(mha(ln(x))))), target)
                   with ln = LayerNorm(6), mha = nn.MultiheadAttention(6, 2, batch_first) on
                   ln(x) as query, key and value with key_padding_mask pad (True = padding);
                   [x, pad, target] and the parameters [ln_w, ln_b, in_proj_weight, in_proj_bias,
                   out_proj_weight, out_proj_bias, W] (PyTorch's names, '.' as '_'), [loss],
                   [v_<p>, hvp_<p>] per parameter, [H_out_proj_weight, H_in_proj_bias] two
                   diagonal Hessian blocks.
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


def products(loss, names, params, seed, out):
    """out += every parameter, a seeded direction v_<p> and H·v (hvp_<p>); returns the Hessian."""
    v = [randn(*p.shape, seed=seed + i) for i, p in enumerate(params)]
    value, hv = hvp(loss, tuple(params), tuple(v))
    out["loss"] = value
    for name, p, vi, hvi in zip(names, params, v, hv):
        out[name] = p
        out["v_" + name] = vi
        out["hvp_" + name] = hvi
    return hessian(loss, tuple(params))


def save(out_dir, case, out, model):
    fixture_io.write(fixture_io.case_path(out_dir, "higher_order", case),
                     {k: fixture_io.to_numpy(t) for k, t in out.items()}, {"model": model})


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

    out = {"x": x, "target": target}
    H = products(loss, NAMES, params, 10, out)
    out["H_ln_w_ln_w"] = H[0][0]
    out["H_ln_w_W2"] = H[0][4]
    out["H_W2_W2"] = H[4][4]
    save(args.out, "mlp", out, "layer_norm -> linear -> gelu -> linear -> cross_entropy")
    mha_case(args.out)


def mha_case(out_dir):
    x = randn(2, 4, 6, seed=21)
    pad = torch.tensor([[False, False, False, True], [False, False, False, False]])
    target = torch.tensor([2, 0])
    torch.manual_seed(22)
    mha = torch.nn.MultiheadAttention(6, 2, batch_first=True, dtype=torch.float64)
    names = ["ln_w", "ln_b", "in_proj_weight", "in_proj_bias", "out_proj_weight", "out_proj_bias", "W"]
    params = [1.0 + randn(6, seed=23, scale=0.1), randn(6, seed=24, scale=0.1),
              mha.in_proj_weight.detach().clone(), randn(18, seed=25, scale=0.1),
              mha.out_proj.weight.detach().clone(), randn(6, seed=26, scale=0.1),
              randn(3, 6, seed=27, scale=0.5)]

    def loss(ln_w, ln_b, w_in, b_in, w_out, b_out, W):
        h = F.layer_norm(x, (6,), ln_w, ln_b)
        # nn.MultiheadAttention's own functional form (batch first -> (T, B, E)), twice
        # differentiable in torch 1.13 (bmm + softmax)
        q = h.transpose(0, 1)
        a, _ = F.multi_head_attention_forward(q, q, q, 6, 2, w_in, b_in, None, None, False, 0.0,
                                              w_out, b_out, training=True, key_padding_mask=pad,
                                              need_weights=False)
        z = F.gelu(a.transpose(0, 1)).mean(1)
        return F.cross_entropy(F.linear(z, W), target)

    out = {"x": x, "pad": pad, "target": target}
    H = products(loss, names, params, 30, out)
    out["H_out_proj_weight"] = H[4][4]
    out["H_in_proj_bias"] = H[3][3]
    save(out_dir, "mha", out,
         "layer_norm -> multihead attention (key padding) -> gelu -> mean over T -> linear -> "
         "cross_entropy")


if __name__ == "__main__":
    main()
