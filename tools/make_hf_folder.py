#!/usr/bin/python3
"""tools/make_hf_folder.py — seeded Hugging Face model folders in published models' exact layouts,
for the bench (bench/hf_load.cpp) and for trying the loader without a model hub:

  /usr/bin/python3 tools/make_hf_folder.py smollm-135m DIR   # LlamaForCausalLM, BF16, ~270 MB
  /usr/bin/python3 tools/make_hf_folder.py gpt2-124m DIR     # GPT2LMHeadModel, F32, ~550 MB

smollm-135m is SmolLM-135M's config: 30 layers, hidden 576, 9 query / 3 key-value heads,
intermediate 1536, vocab 49152, tied embeddings, rope_theta 10000, rms_norm_eps 1e-5, BF16.
gpt2-124m is the original gpt2 upload's: 12 layers, 768 wide, 12 heads, vocab 50257, 1024
positions, F32, GPT2Model names (no "transformer.") with the attn.bias mask buffers.
Weights are drawn like Hugging Face's init (N(0, 0.02), norms 1, biases 0), seeded. The folder also
gets reference_logits.safetensors: ids (1, 8) and the logits (float32) tools/hf_reference.py
computes on the stored values, for the bench's accuracy check. The folders are not committed.
"""
import os
import sys

import torch

import fixture_io
import hf_reference as ref

SMOLLM = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "vocab_size": 49152,
          "hidden_size": 576, "intermediate_size": 1536, "num_hidden_layers": 30,
          "num_attention_heads": 9, "num_key_value_heads": 3, "max_position_embeddings": 2048,
          "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "rope_scaling": None, "hidden_act": "silu",
          "tie_word_embeddings": True, "attention_bias": False, "mlp_bias": False,
          "bos_token_id": 0, "eos_token_id": 0, "initializer_range": 0.02}
GPT2 = {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": 50257,
        "n_positions": 1024, "n_ctx": 1024, "n_embd": 768, "n_layer": 12, "n_head": 12,
        "activation_function": "gelu_new", "layer_norm_epsilon": 1e-5, "resid_pdrop": 0.1,
        "embd_pdrop": 0.1, "attn_pdrop": 0.1, "bos_token_id": 50256, "eos_token_id": 50256}
LAYOUTS = {"smollm-135m": (SMOLLM, torch.bfloat16), "gpt2-124m": (GPT2, torch.float32)}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in LAYOUTS:
        sys.exit("usage: make_hf_folder.py {smollm-135m|gpt2-124m} DIR")
    config, dtype = LAYOUTS[sys.argv[1]]
    out = sys.argv[2]
    torch.manual_seed(0)
    model = ref.build(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.dim() >= 2:
                p.normal_(0, 0.02)
            elif name.endswith("bias"):
                p.zero_()
            else:
                p.fill_(1.0)
    tensors = ref.file_tensors(model, config)
    if config["model_type"] == "gpt2":
        tensors = {k[len("transformer."):]: v for k, v in tensors.items()}
    stored = ref.write_folder(out, config, tensors, dtype)
    with torch.no_grad():  # the reference runs on exactly the stored values
        for k, v in model.state_dict().items():
            key = k[len("transformer."):] if config["model_type"] == "gpt2" else k
            if key in stored and v.is_floating_point():
                v.copy_(stored[key].float())
        ids = torch.randint(0, config["vocab_size"], (1, 8), generator=torch.Generator().manual_seed(1))
        logits = model(ids)
    fixture_io.write(os.path.join(out, "reference_logits.safetensors"), {"ids": ids, "logits": logits})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
