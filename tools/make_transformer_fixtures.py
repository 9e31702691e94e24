#!/usr/bin/python3
"""tools/make_transformer_fixtures.py — PyTorch 1.13 nn.Transformer* reference values for tapegrad.

Run with Debian's torch (1.13, CPU), not the python3 on PATH:
    /usr/bin/python3 tools/make_transformer_fixtures.py [--out DIR]
(DIR: the fixtures root, default tests/fixtures; tools/check_fixtures.py compares a rerun with the
committed files.)

For every configuration <name> in CONFIGS this writes, through tools/fixture_io.py, one file
tests/fixtures/transformer/<name>.safetensors holding the tensors
  <input>               src / tgt / memory, float64, in the layout given to PyTorch
  <mask>                src_mask, tgt_mask, memory_mask (bool True = blocked, or float64 added),
                        src_key_padding_mask, tgt_key_padding_mask, memory_key_padding_mask (bool)
  <param>               every parameter under its state_dict name (self_attn.in_proj_weight, ...)
  out, d_out            output and the fixed upstream gradient
  d_<input>, d_<param>  gradients after out.backward(d_out)
and, as string metadata: module, d_model, nhead, dim_feedforward, activation, norm_first,
batch_first, num_layers, inputs, masks, params (comma separated) and "index" (every
configuration's name, in CONFIGS' order). Beside it goes a file for the safetensors reader's tests,
tests/fixtures/safetensors/transformer/<name>.safetensors: the parameters alone, F64, in
named_parameters() order with the metadata last, as a PyTorch state_dict export lays them out
(written here with struct + json, not the safetensors package), so load_model of a Python-written
file is tested on a real model.

Modules run in training mode with dropout 0 and inputs that require grad, so PyTorch always takes
the Python path (never the fused or nested-tensor fast paths). Every parameter is re-drawn from a
seeded generator (LayerNorm weights around 1, biases nonzero, and the layers of a stack all
different, unlike PyTorch's deep copies), so every gradient is exercised. No mask leaves a query
row without keys (PyTorch gives NaN there). Seeds are fixed: reruns reproduce every file.
"""
import argparse
import json
import os
import shutil
import struct

import numpy as np
import torch
import torch.nn as nn

import fixture_io

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, "..", "tests", "fixtures"))  # the fixtures root

E, NH, FF, B = 8, 2, 16, 2


def causal_bool(T):
    return torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # True = blocked


def causal_float(T):
    return nn.Transformer.generate_square_subsequent_mask(T).double()


def kpm(S, pads):
    """(B, S) bool, True = padded: batch b has its last pads[b] keys padded."""
    m = torch.zeros(B, S, dtype=torch.bool)
    for b, p in enumerate(pads):
        if p:
            m[b, S - p:] = True
    return m


def randomize(module, gen):
    with torch.no_grad():
        for name, p in module.named_parameters():
            r = torch.randn(p.shape, generator=gen, dtype=torch.float64)
            parts = name.split(".")
            if parts[-1] == "weight" and parts[-2].startswith("norm"):  # LayerNorm gains around 1
                p.copy_(1.0 + 0.2 * r)
            else:
                p.copy_(0.4 * r)


def layout(x_tb, batch_first):
    """x is made (T, B, E); return it in the module's layout."""
    return x_tb.transpose(0, 1).contiguous() if batch_first else x_tb


def write_safetensors(path, tensors, metadata):
    """tensors: list of (name, float64 tensor). 8-byte LE header length, JSON header, raw LE data."""
    header, blobs, off = {}, [], 0
    for name, t in tensors:
        data = np.ascontiguousarray(t.detach().cpu().numpy().astype("<f8")).tobytes()
        header[name] = {"dtype": "F64", "shape": list(t.shape), "data_offsets": [off, off + len(data)]}
        blobs.append(data)
        off += len(data)
    header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode("utf-8")
    h += b" " * ((8 - len(h) % 8) % 8)  # the data starts 8-aligned, like the reference writer
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


# ----------------------------------------------------------------------------- configurations
# Each: name -> dict(module kind, constructor kwargs, T, S, masks factory).
def enc_masks(T, S, mask_kind):
    m = {"src_key_padding_mask": kpm(T, [0, 2])}
    if mask_kind == "bool":
        m["src_mask"] = causal_bool(T)
    elif mask_kind == "float":
        m["src_mask"] = causal_float(T)
    return m


def dec_masks(T, S, mask_kind, memory_mask=False):
    m = {"tgt_mask": causal_bool(T) if mask_kind == "bool" else causal_float(T),
         "tgt_key_padding_mask": kpm(T, [0, 1]),
         "memory_key_padding_mask": kpm(S, [min(2, S - 2), 0])}
    if memory_mask:  # query i may not see memory key (i + 1) % S (never a whole row)
        mm = torch.zeros(T, S, dtype=torch.bool)
        for i in range(T):
            mm[i, (i + 1) % S] = True
        m["memory_mask"] = mm
    return m


CONFIGS = {
    "enc_post_relu": dict(kind="enc_layer", act="relu", norm_first=False, bf=False, T=5, masks=("bool",)),
    "enc_pre_relu": dict(kind="enc_layer", act="relu", norm_first=True, bf=False, T=5, masks=("float",)),
    "enc_post_gelu_bf": dict(kind="enc_layer", act="gelu", norm_first=False, bf=True, T=5, masks=("float",)),
    "enc_pre_gelu_bf": dict(kind="enc_layer", act="gelu", norm_first=True, bf=True, T=4, masks=("bool",)),
    "dec_post_relu": dict(kind="dec_layer", act="relu", norm_first=False, bf=False, T=4, S=5, masks=("bool",)),
    "dec_pre_gelu_bf": dict(kind="dec_layer", act="gelu", norm_first=True, bf=True, T=4, S=5,
                            masks=("float", "memory_mask")),
    "dec_post_gelu_bf_mm": dict(kind="dec_layer", act="gelu", norm_first=False, bf=True, T=5, S=3,
                                masks=("bool", "memory_mask")),
    "encoder_2layer_norm": dict(kind="encoder", act="relu", norm_first=False, bf=False, T=5, layers=2,
                                masks=("bool",)),
    "decoder_2layer_norm_pre": dict(kind="decoder", act="gelu", norm_first=True, bf=True, T=4, S=5, layers=2,
                                    masks=("float",)),
    "transformer_1_1": dict(kind="transformer", act="relu", norm_first=False, bf=False, T=4, S=5, masks=()),
    "transformer_1_1_bf_masks": dict(kind="transformer", act="gelu", norm_first=True, bf=True, T=4, S=5,
                                     masks=("masks",)),
}


def build(c):
    kw = dict(dim_feedforward=FF, dropout=0.0, activation=c["act"], batch_first=c["bf"], norm_first=c["norm_first"])
    k = c["kind"]
    if k == "enc_layer":
        return nn.TransformerEncoderLayer(E, NH, **kw)
    if k == "dec_layer":
        return nn.TransformerDecoderLayer(E, NH, **kw)
    if k == "encoder":
        return nn.TransformerEncoder(nn.TransformerEncoderLayer(E, NH, **kw), c["layers"], nn.LayerNorm(E))
    if k == "decoder":
        return nn.TransformerDecoder(nn.TransformerDecoderLayer(E, NH, **kw), c["layers"], nn.LayerNorm(E))
    return nn.Transformer(E, NH, 1, 1, **kw)


def make(name, c, seed):
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    m = build(c).double().train()
    randomize(m, gen)
    T, S = c["T"], c.get("S", c["T"])
    k = c["kind"]
    bf = c["bf"]

    def inp(n):
        return layout(torch.randn(n, B, E, generator=gen, dtype=torch.float64), bf).requires_grad_()

    masks = {}
    if k in ("enc_layer", "encoder"):
        inputs = {"src": inp(T)}
        masks = enc_masks(T, T, c["masks"][0])
        kw = {("mask" if k == "encoder" else "src_mask"): masks.get("src_mask"),
              "src_key_padding_mask": masks["src_key_padding_mask"]}
        out = m(inputs["src"], **kw)
    elif k in ("dec_layer", "decoder"):
        inputs = {"tgt": inp(T), "memory": inp(S)}
        masks = dec_masks(T, S, c["masks"][0], "memory_mask" in c["masks"])
        out = m(inputs["tgt"], inputs["memory"], **masks)
    else:
        inputs = {"src": inp(S), "tgt": inp(T)}
        if c["masks"]:
            masks = {"src_key_padding_mask": kpm(S, [1, 0]), "tgt_mask": causal_float(T),
                     "tgt_key_padding_mask": kpm(T, [0, 2]), "memory_key_padding_mask": kpm(S, [1, 0]),
                     "src_mask": causal_bool(S)}
        else:
            masks = {"tgt_mask": causal_float(T)}
        out = m(inputs["src"], inputs["tgt"], **masks)
    assert torch.isfinite(out).all(), name
    d_out = torch.randn(out.shape, generator=gen, dtype=torch.float64)
    out.backward(d_out)

    tensors = {}
    for n, t in inputs.items():
        tensors[n], tensors["d_" + n] = t, t.grad
    tensors.update(masks)
    params = list(m.named_parameters())
    for n, p in params:
        tensors[n], tensors["d_" + n] = p, p.grad
    tensors["out"], tensors["d_out"] = out, d_out
    cfg = [("module", k), ("d_model", E), ("nhead", NH), ("dim_feedforward", FF), ("activation", c["act"]),
           ("norm_first", int(c["norm_first"])), ("batch_first", int(bf)), ("num_layers", c.get("layers", 1)),
           ("inputs", ",".join(inputs)), ("masks", ",".join(masks)), ("params", ",".join(n for n, _ in params)),
           ("index", ",".join(CONFIGS))]
    fixture_io.write(fixture_io.case_path(OUT, "transformer", name), tensors, dict(cfg))
    write_safetensors(fixture_io.case_path(os.path.join(OUT, "safetensors"), "transformer", name), params,
                      {"format": "pt", "config": name, "torch": torch.__version__})


def main():
    global OUT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=OUT, help="fixtures root (default: tests/fixtures)")
    OUT = ap.parse_args().out
    torch.set_num_threads(1)
    for d in (os.path.join(OUT, "transformer"), os.path.join(OUT, "safetensors", "transformer")):
        shutil.rmtree(d, ignore_errors=True)
    for i, (name, c) in enumerate(CONFIGS.items()):
        make(name, c, 1000 + i)
    print(f"wrote {len(CONFIGS)} configurations to {os.path.join(OUT, 'transformer')}")


if __name__ == "__main__":
    main()
