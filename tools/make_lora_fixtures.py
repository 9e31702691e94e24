#!/usr/bin/python3
"""tools/make_lora_fixtures.py — PyTorch reference values for tests/nn/test_lora.cpp: Hugging
Face PEFT's LoRA Linear (peft/tuners/lora/layer.py, written out here from its published code,
since PEFT is not installable: result = base_layer(x) + lora_B(lora_A(dropout(x))) * scaling,
scaling = lora_alpha / r or lora_alpha / sqrt(r) with use_rslora; merge adds
scaling * (B @ A) to the base weight), float64, one file per case (through tools/fixture_io.py).

Run with Debian's torch (1.13, CPU):  /usr/bin/python3 tools/make_lora_fixtures.py [--out DIR]
Files under tests/fixtures/lora/ (tensors in brackets; metadata in braces):
  linear.safetensors   {in, out, r, lora_alpha, use_rslora, bias}: a LoRA Linear 6 -> 5, r 3,
                       with bias  [x (2,4,6), W, b, A, B, out, dout, dx, dA, dB, merged_W,
                       A_sgd, B_sgd (after one SGD step, lr 0.1, on sum(out * dout))]
  rslora.safetensors   the same for 7 -> 4, r 4, use_rslora, no bias
  conv1d.safetensors   the same over Hugging Face's Conv1D (GPT-2's c_attn layout: W (in, out),
                       y = x @ W + b), 6 -> 9, r 2, with bias: PEFT's fan_in_fan_out = True,
                       merged_W = W + scaling * (B @ A).T, (in, out)
  llama.safetensors    a Llama decoder layer (E 8, 4 query / 2 key-value heads, SwiGLU 12,
                       RMSNorm eps 1e-6, rotary half-split base 10000, causal) with LoRA r 2,
                       lora_alpha 4 on q_proj and v_proj  [x, wq, wk, wv, wo, wg, wu, wd, n1, n2,
                       Aq, Bq, Av, Bv, out, dout, dx, dAq, dBq, dAv, dBv]
  peft_adapter/        the llama case's LoRA weights as PEFT's save_pretrained writes an adapter
                       folder: adapter_model.safetensors (keys
                       base_model.model.<path>.lora_A.weight,
                       metadata {"format": "pt"}) and adapter_config.json (json.dumps indent 2,
                       sorted keys, with the fields PEFT writes, inference_mode true)
B is drawn non-zero (PEFT starts it at zero, which would make every dA vanish). The base weights
are frozen: the reference checks that they get no gradient. Everything is seeded, so reruns give
the same bytes.
"""
import argparse
import json
import math
import os

import torch
import torch.nn.functional as F

import fixture_io

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, "..", "tests", "fixtures"))


def randn(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


class LoraLinear(torch.nn.Module):
    """PEFT's lora.Linear for one adapter: the frozen base plus
    lora_B(lora_A(dropout(x))) * scaling."""

    def __init__(self, W, b, A, B, lora_alpha, use_rslora=False, dropout=0.0):
        super().__init__()
        out_f, in_f = W.shape
        r = A.shape[0]
        self.base_layer = torch.nn.Linear(in_f, out_f, bias=b is not None).double()
        self.lora_A = torch.nn.Linear(in_f, r, bias=False).double()
        self.lora_B = torch.nn.Linear(r, out_f, bias=False).double()
        self.lora_dropout = torch.nn.Dropout(dropout) if dropout > 0 else torch.nn.Identity()
        self.scaling = lora_alpha / math.sqrt(r) if use_rslora else lora_alpha / r
        with torch.no_grad():
            self.base_layer.weight.copy_(W)
            if b is not None:
                self.base_layer.bias.copy_(b)
            self.lora_A.weight.copy_(A)
            self.lora_B.weight.copy_(B)
        for p in self.base_layer.parameters():
            p.requires_grad_(False)

    def forward(self, x):
        result = self.base_layer(x)
        return result + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling

    def merged_weight(self):
        return self.base_layer.weight + self.scaling * (self.lora_B.weight @ self.lora_A.weight)


def linear_case(name, in_f, out_f, r, alpha, use_rslora, bias, seed):
    x = randn(2, 4, in_f, seed=seed).requires_grad_()
    W = randn(out_f, in_f, seed=seed + 1) * 0.5
    b = randn(out_f, seed=seed + 2) * 0.1 if bias else None
    A = randn(r, in_f, seed=seed + 3) * 0.4
    B = randn(out_f, r, seed=seed + 4) * 0.4
    m = LoraLinear(W, b, A, B, alpha, use_rslora)
    out = m(x)
    dout = randn(*out.shape, seed=seed + 5)
    (out * dout).sum().backward()
    assert m.base_layer.weight.grad is None, "the frozen base must get no gradient"
    t = {"x": x, "W": W, "A": A, "B": B, "out": out, "dout": dout, "dx": x.grad,
         "dA": m.lora_A.weight.grad, "dB": m.lora_B.weight.grad, "merged_W": m.merged_weight()}
    if b is not None:
        t["b"] = b
    opt = torch.optim.SGD([m.lora_A.weight, m.lora_B.weight], lr=0.1)
    opt.step()
    t["A_sgd"], t["B_sgd"] = m.lora_A.weight, m.lora_B.weight
    meta = {"in": in_f, "out": out_f, "r": r, "lora_alpha": alpha,
            "use_rslora": int(use_rslora), "bias": int(bias)}
    fixture_io.write(fixture_io.case_path(OUT, "lora", name), t, meta)


class LoraConv1D(torch.nn.Module):
    """PEFT's lora.Linear over transformers' Conv1D (fan_in_fan_out = True): the base computes
    x @ W + b with W (in, out); lora_A (r, in) and lora_B (out, r) as for a Linear; the merge
    adds transpose(B @ A) * scaling."""

    def __init__(self, W, b, A, B, lora_alpha):
        super().__init__()
        self.W, self.b = W, b
        self.lora_A = torch.nn.Parameter(A.clone())
        self.lora_B = torch.nn.Parameter(B.clone())
        self.scaling = lora_alpha / A.shape[0]

    def forward(self, x):
        result = torch.addmm(self.b, x.reshape(-1, x.shape[-1]), self.W).view(
            *x.shape[:-1], self.W.shape[1])
        return result + F.linear(F.linear(x, self.lora_A), self.lora_B) * self.scaling

    def merged_weight(self):
        return self.W + (self.lora_B @ self.lora_A).T * self.scaling


def conv1d_case(name, in_f, out_f, r, alpha, seed):
    x = randn(2, 4, in_f, seed=seed).requires_grad_()
    W = randn(in_f, out_f, seed=seed + 1) * 0.5
    b = randn(out_f, seed=seed + 2) * 0.1
    A = randn(r, in_f, seed=seed + 3) * 0.4
    B = randn(out_f, r, seed=seed + 4) * 0.4
    m = LoraConv1D(W, b, A, B, alpha)
    out = m(x)
    dout = randn(*out.shape, seed=seed + 5)
    (out * dout).sum().backward()
    t = {"x": x, "W": W, "b": b, "A": A, "B": B, "out": out, "dout": dout, "dx": x.grad,
         "dA": m.lora_A.grad.clone(), "dB": m.lora_B.grad.clone(), "merged_W": m.merged_weight()}
    opt = torch.optim.SGD([m.lora_A, m.lora_B], lr=0.1)
    opt.step()
    t["A_sgd"], t["B_sgd"] = m.lora_A, m.lora_B
    meta = {"in": in_f, "out": out_f, "r": r, "lora_alpha": alpha, "use_rslora": 0, "bias": 1,
            "fan_in_fan_out": 1}
    fixture_io.write(fixture_io.case_path(OUT, "lora", name), t, meta)


def llama_case(seed):
    """Llama decoder layer (the block of nn::LlamaDecoderLayer) with LoRA on q_proj and v_proj."""
    E, NH, NKV, hs, eps, r, alpha = 8, 4, 2, 2, 1e-6, 2, 4.0
    w = {"wq": randn(8, 8, seed=seed + 1) * 0.4, "wk": randn(4, 8, seed=seed + 2) * 0.4,
         "wv": randn(4, 8, seed=seed + 3) * 0.4, "wo": randn(8, 8, seed=seed + 4) * 0.4,
         "wg": randn(12, 8, seed=seed + 5) * 0.3, "wu": randn(12, 8, seed=seed + 6) * 0.3,
         "wd": randn(8, 12, seed=seed + 7) * 0.3, "n1": 1 + 0.2 * randn(8, seed=seed + 8),
         "n2": 1 + 0.2 * randn(8, seed=seed + 9)}
    lq = LoraLinear(w["wq"], None, randn(r, E, seed=seed + 10) * 0.4,
                    randn(E, r, seed=seed + 11) * 0.4, alpha)
    lv = LoraLinear(w["wv"], None, randn(r, E, seed=seed + 12) * 0.4,
                    randn(4, r, seed=seed + 13) * 0.4, alpha)
    x = randn(2, 6, E, seed=seed).requires_grad_()
    B, T, _ = x.shape

    def rms(t, g):
        return t * torch.rsqrt(t.pow(2).mean(-1, keepdim=True) + eps) * g

    def rope(t):  # Hugging Face's rotate_half on (B, heads, T, hs)
        inv = 1.0 / (10000 ** (torch.arange(0, hs, 2, dtype=torch.float64) / hs))
        ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
        c, s = torch.cat([ang.cos(), ang.cos()], -1), torch.cat([ang.sin(), ang.sin()], -1)
        t1, t2 = t[..., : hs // 2], t[..., hs // 2:]
        return t * c + torch.cat([-t2, t1], -1) * s

    h = rms(x, w["n1"])
    q = rope(lq(h).view(B, T, NH, hs).transpose(1, 2))
    k = rope(F.linear(h, w["wk"]).view(B, T, NKV, hs).transpose(1, 2))
    v = lv(h).view(B, T, NKV, hs).transpose(1, 2)
    k, v = k.repeat_interleave(NH // NKV, 1), v.repeat_interleave(NH // NKV, 1)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    sc = (q @ k.transpose(-2, -1)) / hs ** 0.5
    att = torch.softmax(sc.masked_fill(~causal, float("-inf")), -1) @ v
    h2 = x + F.linear(att.transpose(1, 2).reshape(B, T, E), w["wo"])
    m = rms(h2, w["n2"])
    out = h2 + F.linear(F.silu(F.linear(m, w["wg"])) * F.linear(m, w["wu"]), w["wd"])
    dout = randn(*out.shape, seed=seed + 14)
    (out * dout).sum().backward()
    t = dict(w, x=x, out=out, dout=dout, dx=x.grad, Aq=lq.lora_A.weight, Bq=lq.lora_B.weight,
             Av=lv.lora_A.weight, Bv=lv.lora_B.weight, dAq=lq.lora_A.weight.grad,
             dBq=lq.lora_B.weight.grad, dAv=lv.lora_A.weight.grad, dBv=lv.lora_B.weight.grad)
    fixture_io.write(fixture_io.case_path(OUT, "lora", "llama"), t,
                     {"r": r, "lora_alpha": alpha, "targets": "q_proj,v_proj"})
    peft_adapter(r, alpha, {"self_attn.q_proj": lq, "self_attn.v_proj": lv})


def peft_adapter(r, alpha, layers):
    folder = os.path.join(OUT, "lora", "peft_adapter")
    weights = {}
    for path, m in layers.items():
        weights[f"base_model.model.{path}.lora_A.weight"] = m.lora_A.weight
        weights[f"base_model.model.{path}.lora_B.weight"] = m.lora_B.weight
    fixture_io.write(os.path.join(folder, "adapter_model.safetensors"), weights, {"format": "pt"})
    config = {  # the fields of PEFT's LoraConfig.to_dict(), as save_pretrained writes them
        "alpha_pattern": {}, "auto_mapping": None, "base_model_name_or_path": "tiny-llama",
        "bias": "none", "corda_config": None, "eva_config": None, "exclude_modules": None,
        "fan_in_fan_out": False, "inference_mode": True, "init_lora_weights": True,
        "layer_replication": None, "layers_pattern": None, "layers_to_transform": None,
        "loftq_config": {}, "lora_alpha": alpha, "lora_bias": False, "lora_dropout": 0.05,
        "megatron_config": None, "megatron_core": "megatron.core", "modules_to_save": None,
        "peft_type": "LORA", "r": r, "rank_pattern": {}, "revision": None,
        "target_modules": ["v_proj", "q_proj"], "task_type": "CAUSAL_LM",
        "trainable_token_indices": None, "use_dora": False, "use_rslora": False}
    with open(os.path.join(folder, "adapter_config.json"), "w") as f:
        f.write(json.dumps(config, indent=2, sort_keys=True) + "\n")


def main():
    global OUT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=OUT, help="fixture root (default tests/fixtures)")
    OUT = ap.parse_args().out
    torch.manual_seed(0)
    linear_case("linear", 6, 5, 3, 6.0, False, True, 300)
    linear_case("rslora", 7, 4, 4, 8.0, True, False, 310)
    llama_case(320)
    conv1d_case("conv1d", 6, 9, 2, 4.0, 340)
    print(f"wrote 4 cases and peft_adapter/ under {os.path.join(OUT, 'lora')}")


if __name__ == "__main__":
    main()
