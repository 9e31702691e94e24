#!/usr/bin/python3
"""tools/make_hf_fixtures.py — tiny seeded Hugging Face model folders in the exact layouts, and
what tools/hf_reference.py (PyTorch 1.13) computes on them, for tests/nn/test_hf*.cpp.

Run with Debian's torch:  /usr/bin/python3 tools/make_hf_fixtures.py [--out tests/fixtures]
Writes under <out>/hf/:
  <name>/config.json + model.safetensors (or shards + model.safetensors.index.json), and
  <name>.safetensors (tests/fixtures.hpp's format): ids (B, T) int64; logits32 (the reference in
  float32 on the file's values); for gpt2 and llama also logits64 and d.<param> (float64: the
  gradients of sum(logits64 · dout) for every parameter, tied ones once under their first name)
  and dout; for 16-bit files w.<name>: the float32 values PyTorch's .float() gives each stored
  tensor (under its file name).
Folders: gpt2 (F32, GPT2Model names without "transformer." and the attn.bias buffers, as the
original upload), llama (F32, grouped-query, untied), llama_bf16 (BF16, tied), llama_f16_sharded
(F16, two shards and an index), qwen2 (F32, q/k/v biases).
"""
import argparse
import os

import torch

import fixture_io
import hf_reference as ref

GPT2 = {"model_type": "gpt2", "architectures": ["GPT2LMHeadModel"], "vocab_size": 32,
        "n_positions": 16, "n_embd": 8, "n_layer": 2, "n_head": 2, "n_inner": None,
        "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5, "resid_pdrop": 0.1,
        "embd_pdrop": 0.1, "attn_pdrop": 0.1, "bos_token_id": 0, "eos_token_id": 0}
LLAMA = {"model_type": "llama", "architectures": ["LlamaForCausalLM"], "vocab_size": 32,
         "hidden_size": 8, "intermediate_size": 12, "num_hidden_layers": 2,
         "num_attention_heads": 2, "num_key_value_heads": 1, "max_position_embeddings": 16,
         "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "hidden_act": "silu",
         "tie_word_embeddings": False, "attention_bias": False, "mlp_bias": False,
         "rope_scaling": None, "bos_token_id": 1, "eos_token_id": 2}
CASES = [  # name, config, file dtype, shards, seed
    ("gpt2", GPT2, torch.float32, 1, 1),
    ("llama", LLAMA, torch.float32, 1, 2),
    ("llama_bf16", dict(LLAMA, tie_word_embeddings=True, rope_theta=500.0), torch.bfloat16, 1, 3),
    ("llama_f16_sharded", dict(LLAMA, num_key_value_heads=2), torch.float16, 2, 4),
    ("qwen2", dict(LLAMA, model_type="qwen2", architectures=["Qwen2ForCausalLM"],
                   rope_theta=1000000.0), torch.float32, 1, 5),
]


def seeded_model(config, seed):
    torch.manual_seed(seed)
    m = ref.build(config)
    with torch.no_grad():
        for name, p in m.named_parameters():
            p.copy_(torch.randn(p.shape) * (0.5 if p.dim() == 1 else 0.3))
            if name.endswith("norm.weight") or ".ln_" in name and name.endswith("weight"):
                p.add_(1.0)
    return m.eval()


def case(out, name, config, dtype, shards, seed):
    m = seeded_model(config, seed)
    stored = ref.write_folder(os.path.join(out, "hf", name), config,
                              file_tensors_for(m, config, name), dtype, shards)
    with torch.no_grad():  # the model now holds exactly what the file holds
        for k, v in m.state_dict().items():
            key = k[len("transformer."):] if name == "gpt2" else k
            if key in stored and v.is_floating_point():
                v.copy_(stored[key].float())
    g = torch.Generator().manual_seed(100 + seed)
    ids = torch.randint(0, config["vocab_size"], (2, 5), generator=g)
    tensors = {"ids": ids, "logits32": m(ids).detach()}
    if name not in ("gpt2", "llama"):  # the variants check loading; gradients once per family
        tensors.update({"w." + k: v.float() for k, v in stored.items() if v.is_floating_point()}
                       if dtype in (torch.float16, torch.bfloat16) else {})
        fixture_io.write(fixture_io.case_path(out, "hf", name), tensors, {"dtype": str(dtype)})
        return
    m64 = ref.build(config).double().eval()
    m64.load_state_dict({k: v.double() if v.is_floating_point() else v
                         for k, v in m.state_dict().items()})
    logits = m64(ids)
    dout = torch.randn(logits.shape, generator=g, dtype=torch.float64)
    params = list(m64.named_parameters())
    grads = torch.autograd.grad((logits * dout).sum(), [p for _, p in params])
    tensors.update(logits64=logits.detach(), dout=dout)
    tensors.update({"d." + n: gr for (n, _), gr in zip(params, grads)})
    fixture_io.write(fixture_io.case_path(out, "hf", name), tensors, {"dtype": str(dtype)})


def file_tensors_for(m, config, name):
    t = ref.file_tensors(m, config)
    if name == "gpt2":  # the original gpt2 upload: GPT2Model's names, with the mask buffers
        t = {k[len("transformer."):]: v for k, v in t.items()}
    else:
        t = {k: v for k, v in t.items()}
    return t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "tests", "fixtures"))
    a = ap.parse_args()
    for c in CASES:
        case(a.out, *c)
        print("wrote hf/" + c[0])


if __name__ == "__main__":
    main()
