"""tools/hf_reference.py — a PyTorch 1.13 reference of Hugging Face's GPT-2 and Llama modelling
code (transformers' modeling_gpt2.py and modeling_llama.py, written here from the published
architecture: transformers is not installable on these machines), plus a writer of Hugging Face
model folders (config.json, model.safetensors or shards with model.safetensors.index.json, in F32,
F64, F16 or BF16 as PyTorch converts them).

Used by tools/make_hf_fixtures.py (the committed test folders) and tools/make_hf_folder.py (the
bench's full-size folders). Run with Debian's /usr/bin/python3 (torch 1.13, CPU).

Conventions kept from Hugging Face: GPT-2's Conv1D weights are (in, out) and computed x·W + b;
gelu_new is the tanh GELU; the causal mask fills with the dtype's lowest value; Llama's rotary
tables are cat(freqs, freqs) with rotate_half (half-split pairs); RMSNorm in the input's dtype
(float32 or float64: Hugging Face upcasts to float32, which is the identity for both); grouped
query attention by repeat_kv; SwiGLU MLP. Not here: dropout (every reference runs in eval mode),
KV caches, scaled rotary.
"""
import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- GPT-2 -------------------------------------------------------------------------------------

class Conv1D(nn.Module):
    def __init__(self, nf, nx):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(nx, nf) * 0.02)
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        shape = x.shape[:-1] + (self.weight.shape[1],)
        return torch.addmm(self.bias, x.reshape(-1, x.shape[-1]), self.weight).view(shape)


def gelu_new(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.n_head, self.n_embd = c["n_head"], c["n_embd"]
        n = c["n_positions"]
        self.register_buffer("bias", torch.tril(torch.ones(n, n, dtype=torch.bool)).view(1, 1, n, n))
        self.c_attn = Conv1D(3 * self.n_embd, self.n_embd)
        self.c_proj = Conv1D(self.n_embd, self.n_embd)

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.n_head
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, hs).transpose(1, 2) for t in (q, k, v))
        w = torch.matmul(q, k.transpose(-1, -2)) / torch.full([], hs ** 0.5, dtype=x.dtype)
        mask = self.bias[:, :, :T, :T]
        w = torch.where(mask, w, torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype))
        w = F.softmax(w, dim=-1)
        o = torch.matmul(w, v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(o)


class GPT2MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        inner = c.get("n_inner") or 4 * c["n_embd"]
        self.c_fc = Conv1D(inner, c["n_embd"])
        self.c_proj = Conv1D(c["n_embd"], inner)
        self.act = gelu_new if c.get("activation_function", "gelu_new") != "gelu" else F.gelu

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class GPT2Block(nn.Module):
    def __init__(self, c):
        super().__init__()
        eps = c.get("layer_norm_epsilon", 1e-5)
        self.ln_1 = nn.LayerNorm(c["n_embd"], eps=eps)
        self.attn = GPT2Attention(c)
        self.ln_2 = nn.LayerNorm(c["n_embd"], eps=eps)
        self.mlp = GPT2MLP(c)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.wte = nn.Embedding(c["vocab_size"], c["n_embd"])
        self.wpe = nn.Embedding(c["n_positions"], c["n_embd"])
        self.h = nn.ModuleList([GPT2Block(c) for _ in range(c["n_layer"])])
        self.ln_f = nn.LayerNorm(c["n_embd"], eps=c.get("layer_norm_epsilon", 1e-5))

    def forward(self, ids):
        pos = torch.arange(ids.shape[1])
        x = self.wte(ids) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.ln_f(x)


class GPT2LMHeadModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.transformer = GPT2Model(c)
        self.lm_head = nn.Linear(c["n_embd"], c["vocab_size"], bias=False)
        self.lm_head.weight = self.transformer.wte.weight  # tied

    def forward(self, ids):
        return self.lm_head(self.transformer(ids))


# ---- Llama (and Qwen2: q, k, v biased) ---------------------------------------------------------

class LlamaRMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        var = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(var + self.eps))


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rotary_tables(hs, T, theta, dtype):
    # Hugging Face computes inv_freq and the angles in float32; the float64 reference in float64.
    ct = torch.float64 if dtype == torch.float64 else torch.float32
    inv_freq = 1.0 / (theta ** (torch.arange(0, hs, 2, dtype=torch.int64).to(ct) / hs))
    freqs = torch.outer(torch.arange(T, dtype=ct), inv_freq)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dtype), emb.sin().to(dtype)


class LlamaAttention(nn.Module):
    def __init__(self, c):
        super().__init__()
        C, self.nh = c["hidden_size"], c["num_attention_heads"]
        self.nkv = c.get("num_key_value_heads", self.nh)
        self.hs = C // self.nh
        self.theta = c.get("rope_theta", 10000.0)
        qkv_bias = c.get("attention_bias", False) or c["model_type"] == "qwen2"
        o_bias = c.get("attention_bias", False) and c["model_type"] != "qwen2"
        self.q_proj = nn.Linear(C, self.nh * self.hs, bias=qkv_bias)
        self.k_proj = nn.Linear(C, self.nkv * self.hs, bias=qkv_bias)
        self.v_proj = nn.Linear(C, self.nkv * self.hs, bias=qkv_bias)
        self.o_proj = nn.Linear(C, C, bias=o_bias)

    def forward(self, x):
        B, T, C = x.shape
        q = self.q_proj(x).view(B, T, self.nh, self.hs).transpose(1, 2)
        k = self.k_proj(x).view(B, T, self.nkv, self.hs).transpose(1, 2)
        v = self.v_proj(x).view(B, T, self.nkv, self.hs).transpose(1, 2)
        cos, sin = rotary_tables(self.hs, T, self.theta, x.dtype)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = self.nh // self.nkv  # repeat_kv
        k = k[:, :, None].expand(B, self.nkv, rep, T, self.hs).reshape(B, self.nh, T, self.hs)
        v = v[:, :, None].expand(B, self.nkv, rep, T, self.hs).reshape(B, self.nh, T, self.hs)
        w = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hs)
        mask = torch.full((T, T), torch.finfo(x.dtype).min, dtype=x.dtype).triu(1)
        w = F.softmax(w + mask, dim=-1)
        o = torch.matmul(w, v).transpose(1, 2).reshape(B, T, C)
        return self.o_proj(o)


class LlamaMLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        C, I, b = c["hidden_size"], c["intermediate_size"], c.get("mlp_bias", False)
        self.gate_proj = nn.Linear(C, I, bias=b)
        self.up_proj = nn.Linear(C, I, bias=b)
        self.down_proj = nn.Linear(I, C, bias=b)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class LlamaDecoderLayer(nn.Module):
    def __init__(self, c):
        super().__init__()
        eps = c.get("rms_norm_eps", 1e-6)
        self.self_attn = LlamaAttention(c)
        self.mlp = LlamaMLP(c)
        self.input_layernorm = LlamaRMSNorm(c["hidden_size"], eps)
        self.post_attention_layernorm = LlamaRMSNorm(c["hidden_size"], eps)

    def forward(self, x):
        x = x + self.self_attn(self.input_layernorm(x))
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = nn.ModuleList([LlamaDecoderLayer(c) for _ in range(c["num_hidden_layers"])])
        self.norm = LlamaRMSNorm(c["hidden_size"], c.get("rms_norm_eps", 1e-6))

    def forward(self, ids):
        x = self.embed_tokens(ids)
        for layer in self.layers:
            x = layer(x)
        return self.norm(x)


class LlamaForCausalLM(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.model = LlamaModel(c)
        self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        if c.get("tie_word_embeddings", False):
            self.lm_head.weight = self.model.embed_tokens.weight

    def forward(self, ids):
        return self.lm_head(self.model(ids))


def build(config):
    """The reference model config (a dict, config.json's content) describes."""
    return GPT2LMHeadModel(config) if config["model_type"] == "gpt2" else LlamaForCausalLM(config)


def file_tensors(model, config):
    """The tensors Hugging Face's save_pretrained writes: every parameter and persistent buffer
    but the tied lm_head.weight (GPT-2's attn.bias buffers are kept: old uploads carry them)."""
    tied = config["model_type"] == "gpt2" or config.get("tie_word_embeddings", False)
    return {k: v for k, v in model.state_dict().items() if not (tied and k == "lm_head.weight")}


# ---- writing folders -----------------------------------------------------------------------------

ST_DTYPES = {torch.float32: "F32", torch.float64: "F64", torch.float16: "F16",
             torch.bfloat16: "BF16", torch.bool: "BOOL", torch.int64: "I64"}


def tensor_bytes(t):
    t = t.detach().contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().tobytes()
    return t.numpy().tobytes()


def safetensors_bytes(tensors):
    """tensors: {name: torch tensor}, written sorted by name with {"format": "pt"} metadata."""
    header, blobs, off = {"__metadata__": {"format": "pt"}}, [], 0
    for name in sorted(tensors):
        b = tensor_bytes(tensors[name])
        header[name] = {"dtype": ST_DTYPES[tensors[name].dtype], "shape": list(tensors[name].shape),
                        "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * ((8 - len(h) % 8) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


def write_folder(folder, config, tensors, dtype=torch.float32, shards=1):
    """folder/config.json and the weights as dtype: model.safetensors, or `shards` files
    model-0000i-of-0000n.safetensors with model.safetensors.index.json."""
    os.makedirs(folder, exist_ok=True)
    conv = {k: (v.to(dtype) if v.is_floating_point() else v) for k, v in tensors.items()}
    cfg = dict(config, torch_dtype={torch.float32: "float32", torch.float16: "float16",
                                    torch.bfloat16: "bfloat16", torch.float64: "float64"}[dtype])
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    if shards == 1:
        with open(os.path.join(folder, "model.safetensors"), "wb") as f:
            f.write(safetensors_bytes(conv))
        return conv
    names = sorted(conv)
    per = (len(names) + shards - 1) // shards
    weight_map, total = {}, 0
    for i in range(shards):
        fname = f"model-{i + 1:05d}-of-{shards:05d}.safetensors"
        part = {n: conv[n] for n in names[i * per:(i + 1) * per]}
        with open(os.path.join(folder, fname), "wb") as f:
            f.write(safetensors_bytes(part))
        for n, t in part.items():
            weight_map[n] = fname
            total += t.numel() * t.element_size()
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2)
        f.write("\n")
    return conv
