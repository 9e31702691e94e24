#!/usr/bin/python3
"""tools/make_autocast_fixtures.py — PyTorch 1.13's CPU autocast and GradScaler as reference
fixtures for tests/ops/test_autocast.cpp and tests/nn/test_amp.cpp.

Run with Debian's torch (1.13, CPU), not the python3 on PATH:
    /usr/bin/python3 tools/make_autocast_fixtures.py [--out DIR]   (DIR: fixtures root)

Writes, through tools/fixture_io.py, into tests/fixtures/autocast/:
  decisions.safetensors   metadata "op:<name>" -> the dtype PyTorch's bf16 autocast gives that op
                          on float32 (or the stated) inputs, "grad:<param>" -> the dtype of a float32
                          parameter's gradient, "outside:<name>" -> dtypes after the region, and
                          "pytorch:<name>" -> what PyTorch itself does where tapegrad does better
                          (a LayerNorm with float32 weights after a Linear raises there); tensors:
                          the small model's inputs and parameters, and its autocast loss.
  grad_scaler.safetensors a scripted GradScaler sequence (a Linear, SGD, injected inf and NaN
                          gradients, growth_interval 3): the initial parameters, each step's
                          inputs, loss, scale after update(), found_inf, and the final parameters.
                          PyTorch 1.13's GradScaler is CUDA only (on the CPU it disables itself),
                          so the script runs its documented algorithm with torch ops on the CPU:
                          _scale and _growth_tracker as float32/int32, unscale by the float32
                          reciprocal computed in float64, found_inf from the scaled gradients,
                          a skipped optimizer step on inf/NaN, and _amp_update_scale_'s rule (backoff
                          on inf; growth after growth_interval clean steps, only to a finite scale).
  gpt_steps.safetensors   a GPT-style model (token + position embeddings, 2 pre-norm encoder
                          layers with a causal mask, d 32, 2 heads, GELU, final LayerNorm, head;
                          T 16, B 4, vocabulary 16) and 20 AdamW steps under bf16 autocast: the
                          initial parameters (state_dict names), the batches, the 20 losses, and
                          the float32 run's 20 losses for scale.
Every draw comes from seeded generators, so a rerun writes the same bytes.
"""
import argparse
import os
import warnings

import torch
import torch.nn as nn
import torch.nn.functional as F

import fixture_io

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, "..", "tests", "fixtures"))
BF16 = torch.bfloat16


def name(dt):
    return str(dt).replace("torch.", "")


def autocast():
    return torch.autocast("cpu", dtype=BF16)


# ------------------------------------------------------------------ dtype decisions
def decisions(out):
    torch.manual_seed(0)  # the modules' own initialisation
    g = torch.Generator().manual_seed(0)
    meta, tensors = {}, {}
    N, C, H, K = 10, 8, 16, 6
    x = torch.randn(N, C, generator=g)
    y = torch.randint(0, K, (N,), generator=g)
    lin1, lin2 = nn.Linear(C, H), nn.Linear(H, K)
    ln = nn.LayerNorm(H)
    with torch.no_grad():
        ln.weight.copy_(1 + 0.1 * torch.randn(H, generator=g))
        ln.bias.copy_(0.1 * torch.randn(H, generator=g))
    params = {"lin1.weight": lin1.weight, "lin1.bias": lin1.bias, "ln.weight": ln.weight,
              "ln.bias": ln.bias, "lin2.weight": lin2.weight, "lin2.bias": lin2.bias}
    tensors.update({"x": x, "y": y})
    tensors.update({k: v.detach().clone() for k, v in params.items()})
    with autocast():
        h = lin1(x)
        a = F.gelu(h)
        try:
            F.layer_norm(a, (H,), ln.weight, ln.bias)
            meta["pytorch:layer_norm"] = "runs"
        except RuntimeError as e:
            meta["pytorch:layer_norm"] = "raises: " + str(e).split("\n")[0]
        # PyTorch can only go on with the weights cast by hand; tapegrad's layer_norm takes the
        # bfloat16 input with float32 weights and gives bfloat16 (the op is on no list).
        n = F.layer_norm(a, (H,), ln.weight.to(BF16), ln.bias.to(BF16))
        logits = lin2(n)
        loss = F.cross_entropy(logits, y)
    for k, t in [("linear1", h), ("gelu", a), ("layer_norm", n), ("linear2", logits),
                 ("cross_entropy", loss)]:
        meta["op:" + k] = name(t.dtype)
    loss.backward()
    for k, p in params.items():
        meta["grad:" + k] = name(p.grad.dtype)
    tensors["loss"] = loss.detach()

    xb = torch.randn(2, 3, 4, generator=g)
    yb = torch.randn(2, 4, 5, generator=g)
    m = torch.randn(4, 5, generator=g)
    v = torch.randn(2, 3, generator=g)
    mha = nn.MultiheadAttention(C, 2, batch_first=True)
    q = torch.randn(2, 5, C, generator=g)
    emb = torch.randn(7, C, generator=g)
    idx = torch.tensor([1, 3, 5])
    with autocast():
        b = torch.bmm(xb, yb)
        s = F.softmax(b, -1)
        ops = {
            "bmm": b, "softmax": s, "sum": s.sum(),
            "matmul": torch.matmul(xb, yb), "mm": torch.mm(x, m.new_ones(C, 3)),
            "einsum": torch.einsum("bij,bjk->bik", xb, yb),
            "matmul_float64": torch.matmul(xb.double(), yb.double()),
            "mse_loss_bf16": F.mse_loss(v.to(BF16), v.to(BF16) * 2),
            "l1_loss_bf16": F.l1_loss(v.to(BF16), v.to(BF16) * 2),
            "smooth_l1_loss_bf16": F.smooth_l1_loss(v.to(BF16), v.to(BF16) * 2),
            "huber_loss_bf16": F.huber_loss(v.to(BF16), v.to(BF16) * 2),
            "binary_cross_entropy_bf16": F.binary_cross_entropy(torch.sigmoid(v).to(BF16),
                                                                 torch.sigmoid(2 * v).to(BF16)),
            "binary_cross_entropy_with_logits_bf16":
                F.binary_cross_entropy_with_logits(v.to(BF16), torch.sigmoid(v).to(BF16)),
            "nll_loss_bf16": F.nll_loss(F.log_softmax(v, 1).to(BF16), torch.tensor([0, 2])),
            "kl_div_bf16": F.kl_div(F.log_softmax(v, 1).to(BF16), F.softmax(v, 1).to(BF16),
                                    reduction="batchmean"),
            "cross_entropy_bf16": F.cross_entropy(v.to(BF16), torch.tensor([0, 2])),
            "prod_bf16": torch.prod(v.to(BF16)),
            "cat_mixed": torch.cat([v.to(BF16), v]), "cat_bf16": torch.cat([v.to(BF16), v.to(BF16)]),
            "stack_mixed": torch.stack([v.to(BF16), v]),
            "embedding": F.embedding(idx, emb), "exp_bf16": torch.exp(v.to(BF16)),
            "add_mixed": v.to(BF16) + v, "mul_scalar_bf16": v.to(BF16) * 2.5,
        }
        o, w = mha(q, q, q)
        ops["mha_output"], ops["mha_weights"] = o, w
    for k, t in ops.items():
        meta["op:" + k] = name(t.dtype)
    meta["outside:linear"] = name(lin1(x).dtype)
    fixture_io.write(fixture_io.case_path(out, "autocast", "decisions"), tensors, meta)


# ------------------------------------------------------------------ GradScaler
class Scaler:
    """torch.cuda.amp.GradScaler's algorithm (grad_scaler.py and the CUDA kernels
    _amp_foreach_non_finite_check_and_unscale_ / _amp_update_scale_) on CPU tensors."""

    def __init__(self, init_scale, growth_factor, backoff_factor, growth_interval):
        self.scale = torch.tensor([init_scale], dtype=torch.float32)
        self.tracker = torch.tensor([0], dtype=torch.int32)
        self.growth, self.backoff, self.interval = growth_factor, backoff_factor, growth_interval

    def unscale_(self, params):
        inv = self.scale.double().reciprocal().float()
        found = torch.zeros(1)
        for p in params:
            if p.grad is None:
                continue
            if not torch.isfinite(p.grad).all():
                found.fill_(1.0)
            if inv.item() != 1.0:
                p.grad.mul_(inv)
        return found

    def update(self, found):
        if found.item():
            self.scale.mul_(self.backoff)
            self.tracker.zero_()
        else:
            t = self.tracker.item() + 1
            if t == self.interval:
                new = (self.scale * self.growth).float()
                if torch.isfinite(new).all():
                    self.scale.copy_(new)
                t = 0
            self.tracker.fill_(t)


def grad_scaler(out):
    g = torch.Generator().manual_seed(1)
    lin = nn.Linear(4, 3)
    with torch.no_grad():
        lin.weight.copy_(torch.randn(3, 4, generator=g) * 0.5)
        lin.bias.copy_(torch.randn(3, generator=g) * 0.1)
    tensors = {"weight0": lin.weight.detach().clone(), "bias0": lin.bias.detach().clone()}
    opt = torch.optim.SGD(lin.parameters(), lr=0.1)
    sc = Scaler(2.0 ** 10, 2.0, 0.5, 3)
    steps = 12
    inject = {2: float("inf"), 6: float("nan"), 7: float("inf")}  # step -> value put in weight.grad
    xs = torch.randn(steps, 5, 4, generator=g)
    ys = torch.randn(steps, 5, 3, generator=g)
    losses, scales, found_infs = [], [], []
    for s in range(steps):
        opt.zero_grad()
        loss = F.mse_loss(lin(xs[s]), ys[s])
        (loss * sc.scale).sum().backward()
        if s in inject:
            with torch.no_grad():
                lin.weight.grad[1, 2] = inject[s]
        found = sc.unscale_(lin.parameters())
        if not found.item():
            opt.step()
        sc.update(found)
        losses.append(loss.item())
        scales.append(sc.scale.item())
        found_infs.append(found.item())
    tensors.update({"x": xs, "y": ys, "loss": torch.tensor(losses, dtype=torch.float32),
                    "scale": torch.tensor(scales, dtype=torch.float32),
                    "found_inf": torch.tensor(found_infs, dtype=torch.float32),
                    "weight": lin.weight.detach().clone(), "bias": lin.bias.detach().clone()})
    meta = {"init_scale": 1024, "growth_factor": 2.0, "backoff_factor": 0.5, "growth_interval": 3,
            "lr": 0.1, "inject": ",".join(f"{k}:{v}" for k, v in inject.items())}
    fixture_io.write(fixture_io.case_path(out, "autocast", "grad_scaler"), tensors, meta)


# ------------------------------------------------------------------ GPT steps
class GPT(nn.Module):
    def __init__(self, V, T, d, nh, layers):
        super().__init__()
        self.tok, self.pos = nn.Embedding(V, d), nn.Embedding(T, d)
        layer = nn.TransformerEncoderLayer(d, nh, 2 * d, dropout=0.0, activation="gelu",
                                           batch_first=True, norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers, norm=nn.LayerNorm(d),
                                             enable_nested_tensor=False)
        self.head = nn.Linear(d, V)

    def forward(self, idx):
        T = idx.shape[1]
        x = self.tok(idx) + self.pos(torch.arange(T))
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)  # True: blocked
        return self.head(self.encoder(x, mask=mask))


def run_gpt(state, data, use_autocast):
    torch.manual_seed(0)
    model = GPT(16, 16, 32, 2, 2)
    model.load_state_dict(state)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2, betas=(0.9, 0.99), weight_decay=0.01)
    losses = []
    for s in range(data.shape[0]):
        opt.zero_grad()
        with torch.autocast("cpu", dtype=BF16, enabled=use_autocast):
            logits = model(data[s, :, :-1])
            loss = F.cross_entropy(logits.reshape(-1, 16), data[s, :, 1:].reshape(-1))
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses


def gpt_steps(out):
    torch.manual_seed(2)
    model = GPT(16, 16, 32, 2, 2)
    state = {k: v.detach().clone() for k, v in model.state_dict().items()}
    g = torch.Generator().manual_seed(3)
    data = torch.randint(0, 16, (20, 4, 17), generator=g)
    losses = run_gpt(state, data, True)
    losses32 = run_gpt(state, data, False)
    diff = max(abs(a - b) for a, b in zip(losses, losses32))
    print(f"gpt_steps: bf16 autocast {losses[0]:.4f} -> {losses[-1]:.4f}; "
          f"largest |bf16 - float32| loss difference {diff:.4f}")
    tensors = {"param." + k: v for k, v in state.items()}
    tensors.update({"data": data, "loss": torch.tensor(losses, dtype=torch.float32),
                    "loss_fp32": torch.tensor(losses32, dtype=torch.float32)})
    meta = {"V": 16, "T": 16, "d": 32, "nhead": 2, "dim_feedforward": 64, "layers": 2,
            "lr": 1e-2, "betas": "0.9,0.99", "weight_decay": 0.01,
            "params": ",".join(state.keys())}
    fixture_io.write(fixture_io.case_path(out, "autocast", "gpt_steps"), tensors, meta)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=OUT, help="fixtures root (default tests/fixtures)")
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    decisions(args.out)
    grad_scaler(args.out)
    gpt_steps(args.out)


if __name__ == "__main__":
    main()
