"""bench/bench_torch.py — the PyTorch twin of bench_tapegrad (run with /usr/bin/python3, torch 1.13).

Prints `metric <name> <value> <unit>` lines with the same names as bench/bench.cpp, `torch` in
place of `tg`. Measures the same way: warm-up, calibrated batches, candidates interleaved, median.
bench/run.sh pins OMP_NUM_THREADS / OPENBLAS_NUM_THREADS before starting us; we also call
torch.set_num_threads(--threads, default 1), which does not reach OpenBLAS's own pool, hence the
environment.
Adding a benchmark: a function that calls emit(), listed in GROUPS, and a row in report.py.
"""
import argparse
import math
import statistics
import sys
import time

import torch


def emit(name, value, unit):
    print(f"metric {name} {value:.6g} {unit}", flush=True)


def time_batch(f, inner):
    t0 = time.perf_counter()
    for _ in range(inner):
        f()
    return (time.perf_counter() - t0) / inner


def calibrate(f, target):
    f()
    inner = 1
    while inner < 1 << 30:
        t = time_batch(f, inner) * inner
        if t >= target:
            break
        inner *= 8 if t < target / 16 else 2
    return inner


def interleaved(fs, budget, min_batches=5):
    """Median seconds per call of each candidate, alternating batches A B A B ..."""
    batch_target = max(2e-3, budget / (8.0 * len(fs)))
    inner = [calibrate(f, batch_target) for f in fs]
    times = [[] for _ in fs]
    t0 = time.perf_counter()
    b = 0
    while True:
        for i, f in enumerate(fs):
            times[i].append(time_batch(f, inner[i]))
        b += 1
        if b >= min_batches and time.perf_counter() - t0 >= budget:
            break
    return [statistics.median(t) for t in times]


def bench_matmul(opts):
    for n in (64, 128, 256, 512, 1024, 2048):
        a, b = torch.randn(n, n), torch.randn(n, n)
        (s,) = interleaved([lambda: torch.matmul(a, b)], opts.budget / 2, 3 if n >= 1024 else 5)
        emit(f"matmul.torch.{n}", 2.0 * n ** 3 / s * 1e-9, "GFLOP/s")


def bench_tiny(opts):
    x = torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    w = torch.tensor([0.5, 1.0, 1.5, 0.9], requires_grad=True)
    g = torch.ones(4)

    def fwd():
        x * w

    def fwd_bwd():
        y = x * w
        y.backward(g)

    def chain10():
        y = x
        for _ in range(10):
            y = y * w
        y.backward(g)

    s = interleaved([fwd, fwd_bwd, chain10], opts.budget * 1.5)
    emit("tiny.fwd.torch", s[0] * 1e6, "us")
    emit("tiny.fwd_bwd.torch", s[1] * 1e6, "us")
    emit("chain10.fwd_bwd.torch", s[2] * 1e6, "us")

    # the same five views (t, narrow, select, unsqueeze, expand), no grad
    for n in (64, 4096):
        big = torch.zeros(n, n)

        def chain(big=big, n=n):
            big.t().narrow(0, 1, n // 2).select(1, 3).unsqueeze(0).expand(4, n // 2)

        emit(f"views.chain.torch.{n}", interleaved([chain], opts.budget * 0.5)[0] * 1e6, "us")


MHA_SIZES = ((32, 64, 128, 4), (8, 256, 256, 8), (2, 1024, 512, 8))


def bench_mha(opts):
    """nn.MultiheadAttention fwd+bwd, self-attention, batch_first, train mode, dropout 0, f32.
    Masks as users write them in 1.13: causal = bool (T, T) attn_mask, triu True = blocked;
    padding = (B, T) bool key_padding_mask, last 25 % True."""
    for (B, T, E, NH) in MHA_SIZES:
        mha = torch.nn.MultiheadAttention(E, NH, dropout=0.0, batch_first=True).train()
        x = torch.randn(B, T, E, requires_grad=True)
        g = torch.randn(B, T, E)  # fixed upstream gradient
        causal = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        pad = torch.zeros(B, T, dtype=torch.bool)
        pad[:, T - T // 4:] = True

        def step(**kw):
            x.grad = None
            mha.zero_grad(set_to_none=True)
            y, _ = mha(x, x, x, need_weights=False, **kw)
            y.backward(g)

        big = T >= 1024
        xq = torch.randn(B, T, E, requires_grad=True)

        def cross():
            x.grad = None
            xq.grad = None
            mha.zero_grad(set_to_none=True)
            y, _ = mha(xq, x, x, need_weights=False)
            y.backward(g)

        s = interleaved([lambda: step(), lambda: step(attn_mask=causal),
                         lambda: step(key_padding_mask=pad), cross],
                        opts.budget * (1.0 if big else 1.5), 3 if big else 5)
        tag = f"{B}x{T}x{E}x{NH}"
        emit(f"mha.none.torch.{tag}", s[0] * 1e3, "ms")
        emit(f"mha.causal.torch.{tag}", s[1] * 1e3, "ms")
        emit(f"mha.pad.torch.{tag}", s[2] * 1e3, "ms")
        emit(f"mha.cross.torch.{tag}", s[3] * 1e3, "ms")


def maxrss_mib():
    import resource
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # KiB on Linux


def local_unfold(q, k, v, W=64, R=64):
    """The band i - W <= j <= i + W blockwise without a Python loop: query blocks of R rows
    (zero-padded to a multiple of R) against key windows of R + 2W from k.unfold (a strided view;
    its backward is linear in T), masked, softmaxed, batched matmuls."""
    B, NH, T, hs = q.shape
    nb = -(-T // R)
    Tp = nb * R
    F = torch.nn.functional
    qb = F.pad(q, (0, 0, 0, Tp - T)).view(B, NH, nb, R, hs)
    kb = F.pad(k, (0, 0, W, Tp - T + W)).unfold(2, R + 2 * W, R)  # (B, NH, nb, hs, R + 2W)
    vb = F.pad(v, (0, 0, W, Tp - T + W)).unfold(2, R + 2 * W, R).transpose(-1, -2)
    i = torch.arange(Tp).view(nb, R, 1)
    j = (torch.arange(nb) * R - W).view(nb, 1, 1) + torch.arange(R + 2 * W).view(1, 1, -1)
    blocked = (j < i - W) | (j > i + W) | (j < 0) | (j >= T)
    s = torch.matmul(qb, kb) * hs ** -0.5
    p = torch.softmax(s.masked_fill(blocked, float("-inf")), dim=-1)
    return torch.matmul(p, vb).reshape(B, NH, Tp, hs)[:, :, :T]


def local_blockwise(q, k, v, W=64, R=64):
    """The band i - W <= j <= i + W computed blockwise in plain PyTorch ops (autograd records
    it): a Python loop over query blocks of R rows against their key band [r0 - W, r1 + W),
    masked, softmaxed, concatenated. Each slice's backward writes a full-size zero gradient, so
    the backward is O(T^2 / R) in memory traffic: the code users write, not the best PyTorch."""
    T, hs = q.shape[-2], q.shape[-1]
    scale = hs ** -0.5
    outs = []
    for r0 in range(0, T, R):
        r1 = min(T, r0 + R)
        k0, k1 = max(0, r0 - W), min(T, r1 + W)
        i = torch.arange(r0, r1).unsqueeze(1)
        j = torch.arange(k0, k1).unsqueeze(0)
        blocked = (j < i - W) | (j > i + W)
        s = torch.matmul(q[..., r0:r1, :], k[..., k0:k1, :].transpose(-2, -1)) * scale
        p = torch.softmax(s.masked_fill(blocked, float("-inf")), dim=-1)
        outs.append(torch.matmul(p, v[..., k0:k1, :]))
    return torch.cat(outs, dim=-2)


def local_dense(q, k, v, allowed):
    """Dense masked attention: (T, T) scores, masked_fill, softmax, matmul."""
    s = torch.matmul(q, k.transpose(-2, -1)) * q.shape[-1] ** -0.5
    p = torch.softmax(s.masked_fill(~allowed, float("-inf")), dim=-1)
    return torch.matmul(p, v)


def run_one(kind, T, budget):
    """One configuration in this fresh process: median time after a warm-up, peak RSS."""
    import time as _t
    base = maxrss_mib()  # includes importing torch
    NH, hs, W = 4, 64, 64
    q, k, v = (torch.randn(1, NH, T, hs, requires_grad=True) for _ in range(3))
    g = torch.randn(1, NH, T, hs)
    if kind == "blk":
        fn = lambda: local_unfold(q, k, v, W)
    elif kind == "loop":
        fn = lambda: local_blockwise(q, k, v, W)
    elif kind == "dense":
        i = torch.arange(T).unsqueeze(1)
        j = torch.arange(T).unsqueeze(0)
        allowed = (j >= i - W) & (j <= i + W)
        fn = lambda: local_dense(q, k, v, allowed)
    else:
        print(f"bench_torch.py --one: kind must be blk, loop or dense, got {kind!r}", file=sys.stderr)
        return 2

    def step():
        for t in (q, k, v):
            t.grad = None
        fn().backward(g)

    t0 = _t.perf_counter()
    step()
    first = _t.perf_counter() - t0
    # A call over twice the budget takes seconds: warm-up effects are noise there, keep the first.
    reps = 0 if first >= 2 * budget else int(min(9, max(1, budget / max(first, 1e-9))))
    times = [time_batch(step, 1) for _ in range(reps)] or [first]
    name = f"local.{kind}.torch.{T}"
    emit(name + ".ms", statistics.median(times) * 1e3, "ms")
    emit(name + ".mib", maxrss_mib(), "MiB")
    emit(name + ".base", base, "MiB")
    return 0


# ---- one full training step: zero_grad, forward, cross-entropy, backward, AdamW step ----
TRAIN_E, TRAIN_NH, TRAIN_FF = 128, 4, 512


class PositionalEncoding(torch.nn.Module):
    """The PyTorch tutorial's sinusoids (batch-first here): x + pe[:T], then dropout."""

    def __init__(self, E, p=0.1, max_len=512):
        super().__init__()
        import math
        self.dropout = torch.nn.Dropout(p)
        position = torch.arange(max_len).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, E, 2) * (-math.log(10000.0) / E))
        pe = torch.zeros(max_len, E)
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        self.register_buffer("pe", pe)

    def forward(self, x):  # (B, T, E)
        return self.dropout(x + self.pe[: x.size(1)])


class EncoderClassifier(torch.nn.Module):
    """tokens (B, T) -> emb * sqrt(E) + positions -> 2 encoder layers -> mean over T -> Linear(E, 2)."""
    V, B, T, C, L = 8000, 32, 64, 2, 2

    def __init__(self):
        super().__init__()
        E = TRAIN_E
        self.emb = torch.nn.Embedding(self.V, E)
        self.pos = PositionalEncoding(E)
        layer = torch.nn.TransformerEncoderLayer(E, TRAIN_NH, TRAIN_FF, 0.1, batch_first=True)
        self.encoder = torch.nn.TransformerEncoder(layer, self.L, enable_nested_tensor=False)
        self.head = torch.nn.Linear(E, self.C)

    def forward(self, tokens):
        x = self.pos(self.emb(tokens) * TRAIN_E ** 0.5)
        return self.head(self.encoder(x).mean(dim=1))


class Seq2Seq(torch.nn.Module):
    """nn.Transformer 2 + 2 layers, batch_first; causal target mask from
    generate_square_subsequent_mask (float, -inf above the diagonal), as users write it in 1.13."""
    V, B, S, T, L = 1000, 32, 20, 20, 2

    def __init__(self):
        super().__init__()
        E = TRAIN_E
        self.src_emb = torch.nn.Embedding(self.V, E)
        self.tgt_emb = torch.nn.Embedding(self.V, E)
        self.pos = PositionalEncoding(E)
        self.transformer = torch.nn.Transformer(E, TRAIN_NH, self.L, self.L, TRAIN_FF, 0.1,
                                                batch_first=True)
        self.out = torch.nn.Linear(E, self.V)
        self.register_buffer("tgt_mask", torch.nn.Transformer.generate_square_subsequent_mask(self.T))

    def forward(self, src, tgt):
        s = self.pos(self.src_emb(src) * TRAIN_E ** 0.5)
        t = self.pos(self.tgt_emb(tgt) * TRAIN_E ** 0.5)
        return self.out(self.transformer(s, t, tgt_mask=self.tgt_mask))


class GPT(torch.nn.Module):
    """GPT-style language model as users of 1.13 write it: token and position nn.Embedding
    (wte, wpe), 4 pre-norm TransformerEncoderLayer(256, 8, 1024, dropout 0, GELU, batch_first,
    norm_first) under a bool causal attn_mask (triu True = blocked), a final LayerNorm and a
    Linear head."""
    V, B, T, E, NH, FF, L = 256, 16, 256, 256, 8, 1024, 4

    def __init__(self):
        super().__init__()
        self.tok = torch.nn.Embedding(self.V, self.E)
        self.pos = torch.nn.Embedding(self.T, self.E)
        layer = torch.nn.TransformerEncoderLayer(self.E, self.NH, self.FF, dropout=0.0,
                                                 activation="gelu", batch_first=True,
                                                 norm_first=True)
        self.blocks = torch.nn.TransformerEncoder(layer, self.L, norm=torch.nn.LayerNorm(self.E),
                                                  enable_nested_tensor=False)
        self.head = torch.nn.Linear(self.E, self.V)
        causal = torch.triu(torch.ones(self.T, self.T, dtype=torch.bool), diagonal=1)
        self.register_buffer("causal", causal)
        self.register_buffer("positions", torch.arange(self.T))

    def forward(self, tokens):  # (B, T) -> (B, T, V)
        T = tokens.size(1)
        x = self.tok(tokens) + self.pos(self.positions[:T])
        return self.head(self.blocks(x, mask=self.causal[:T, :T]))


def make_train_step(kind):
    F = torch.nn.functional
    clip = None
    if kind == "gpt":
        M = GPT
        m = M().train()
        tokens = torch.randint(0, M.V, (M.B, M.T))
        gold = torch.randint(0, M.V, (M.B * M.T,))
        loss = lambda: F.cross_entropy(m(tokens).reshape(M.B * M.T, M.V), gold)
        opt = torch.optim.AdamW(m.parameters(), lr=3e-4, weight_decay=0.1)
        clip = 1.0
    elif kind == "enc":
        M = EncoderClassifier
        m = M().train()
        tokens = torch.randint(0, M.V, (M.B, M.T))
        labels = torch.randint(0, M.C, (M.B,))
        loss = lambda: F.cross_entropy(m(tokens), labels)
    else:
        M = Seq2Seq
        m = M().train()
        src = torch.randint(0, M.V, (M.B, M.S))
        tgt = torch.randint(0, M.V, (M.B, M.T))
        gold = torch.randint(0, M.V, (M.B * M.T,))
        loss = lambda: F.cross_entropy(m(src, tgt).reshape(M.B * M.T, M.V), gold)
    if kind != "gpt":
        opt = torch.optim.AdamW(m.parameters(), lr=1e-4)
    n = sum(p.numel() for p in m.parameters())  # same models as bench.cpp: compare these lines
    print(f"# train {type(m).__name__}: {n} parameters, first loss {loss().item():.4f}")

    def step():
        opt.zero_grad(set_to_none=True)
        loss().backward()
        if clip is not None:
            torch.nn.utils.clip_grad_norm_(m.parameters(), clip)
        opt.step()
    return step


def bench_train(opts):
    enc, s2s = make_train_step("enc"), make_train_step("s2s")
    s = interleaved([enc, s2s], opts.budget * 3)
    emit("train.enc.torch", s[0] * 1e3, "ms")
    emit("train.s2s.torch", s[1] * 1e3, "ms")


def bench_gpt(opts):
    step = make_train_step("gpt")
    (s,) = interleaved([step], opts.budget * 3, 3)
    emit("train.gpt.torch", s * 1e3, "ms")


class NanoGPT(torch.nn.Module):
    """nanoGPT's model.py (Karpathy) at its CPU recipe shape, bias-free, with its own LayerNorm
    and the masked-softmax attention it falls back to on PyTorch 1.13 (no
    F.scaled_dot_product_attention there); bench/nanogpt.cpp is the tapegrad port."""
    V, B, T, C, NH, L = 65, 12, 64, 128, 4, 4

    class LayerNorm(torch.nn.Module):
        def __init__(self, n):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.ones(n))

        def forward(self, x):
            return torch.nn.functional.layer_norm(x, self.weight.shape, self.weight, None, 1e-5)

    class Block(torch.nn.Module):
        def __init__(self, C, NH, T):
            super().__init__()
            L = torch.nn.Linear
            self.NH = NH
            self.ln_1, self.ln_2 = NanoGPT.LayerNorm(C), NanoGPT.LayerNorm(C)
            self.c_attn, self.attn_proj = L(C, 3 * C, bias=False), L(C, C, bias=False)
            self.c_fc, self.mlp_proj = L(C, 4 * C, bias=False), L(4 * C, C, bias=False)
            self.register_buffer("bias", torch.tril(torch.ones(T, T)).view(1, 1, T, T))

        def attn(self, x):
            B, T, C = x.size()
            q, k, v = self.c_attn(x).split(C, dim=2)
            k = k.view(B, T, self.NH, C // self.NH).transpose(1, 2)
            q = q.view(B, T, self.NH, C // self.NH).transpose(1, 2)
            v = v.view(B, T, self.NH, C // self.NH).transpose(1, 2)
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = torch.nn.functional.softmax(att, dim=-1)
            y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
            return self.attn_proj(y)

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp_proj(torch.nn.functional.gelu(self.c_fc(self.ln_2(x))))

    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(self.V, self.C)
        self.wpe = torch.nn.Embedding(self.T, self.C)
        self.h = torch.nn.ModuleList([self.Block(self.C, self.NH, self.T) for _ in range(self.L)])
        self.ln_f = self.LayerNorm(self.C)
        self.lm_head = torch.nn.Linear(self.C, self.V, bias=False)
        self.wte.weight = self.lm_head.weight  # nanoGPT's weight tying
        self.register_buffer("positions", torch.arange(self.T))

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(self.positions[:idx.size(1)])
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))


def make_nanogpt_step():
    F = torch.nn.functional
    M = NanoGPT
    m = M().train()
    idx = torch.randint(0, M.V, (M.B, M.T))
    targets = torch.randint(0, M.V, (M.B * M.T,))
    decay = [p for p in m.parameters() if p.dim() >= 2]
    no_decay = [p for p in m.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1},
                             {"params": no_decay, "weight_decay": 0.0}], lr=1e-3, betas=(0.9, 0.99))
    loss = lambda: F.cross_entropy(m(idx).reshape(M.B * M.T, M.V), targets)
    n = sum(p.numel() for p in m.parameters())
    print(f"# train {type(m).__name__}: {n} parameters, first loss {loss().item():.4f}")

    def step():
        opt.zero_grad(set_to_none=True)
        loss().backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()
    return step


def bench_nanogpt(opts):
    (s,) = interleaved([make_nanogpt_step()], opts.budget * 3, 3)
    emit("train.nanogpt.torch", s * 1e3, "ms")


UNARY_SHAPE = (16, 256, 1024)


def bench_unary(opts):
    """Unary ops on one (16, 256, 1024) f32 tensor: forward alone under torch.no_grad(), and
    forward + backward with a fixed g, x.grad reset per call; the two alternate batch by batch."""
    F = torch.nn.functional
    ops = (("gelu", F.gelu), ("gelu_tanh", lambda t: F.gelu(t, approximate="tanh")),
           ("tanh", torch.tanh), ("exp", torch.exp), ("sigmoid", torch.sigmoid), ("silu", F.silu))
    x = torch.randn(*UNARY_SHAPE, requires_grad=True)
    g = torch.randn(*UNARY_SHAPE)  # fixed upstream gradient
    for name, f in ops:
        def fwd():
            with torch.no_grad():
                f(x)

        def fwd_bwd():
            x.grad = None
            f(x).backward(g)

        s = interleaved([fwd, fwd_bwd], opts.budget)
        emit(f"unary.{name}.fwd.torch", s[0] * 1e3, "ms")
        emit(f"unary.{name}.fwd_bwd.torch", s[1] * 1e3, "ms")

    # the SwiGLU feed-forward of a small LLaMA (C 256, hidden 688) on (16, 128, 256), fwd + bwd
    lin = [torch.nn.Linear(256, 688, bias=False), torch.nn.Linear(256, 688, bias=False),
           torch.nn.Linear(688, 256, bias=False)]
    h = torch.randn(16, 128, 256, requires_grad=True)
    gh = torch.randn(16, 128, 256)

    def swiglu():
        h.grad = None
        for m in lin:
            m.weight.grad = None
        lin[2](F.silu(lin[0](h)) * lin[1](h)).backward(gh)

    s = interleaved([swiglu], opts.budget)
    emit("unary.swiglu.fwd_bwd.torch", s[0] * 1e3, "ms")


ROW_SIZES = ((4096, 128), (512, 1024))


def bench_rowwise(opts):
    """softmax, F.layer_norm (weight 1, bias 0, requiring grad) and a composed RMSNorm (weight 1)
    over the last dim, forward +
    backward with a fixed g, grads reset per call; then sums of (4096, 128) under no_grad."""
    F = torch.nn.functional
    for (N, C) in ROW_SIZES:
        x = torch.randn(N, C, requires_grad=True)
        g = torch.randn(N, C)
        w = torch.ones(C, requires_grad=True)
        b = torch.zeros(C, requires_grad=True)

        def softmax():
            x.grad = None
            torch.softmax(x, dim=-1).backward(g)

        def layer_norm():
            x.grad = w.grad = b.grad = None
            F.layer_norm(x, (C,), w, b).backward(g)

        def rms_norm():  # torch 1.13 has no F.rms_norm: the composed form models used before it
            x.grad = w.grad = None
            (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w).backward(g)

        s = interleaved([softmax, layer_norm, rms_norm], opts.budget)
        tag = f"{N}x{C}"
        emit(f"rowwise.softmax.torch.{tag}", s[0] * 1e3, "ms")
        emit(f"rowwise.layer_norm.torch.{tag}", s[1] * 1e3, "ms")
        emit(f"rowwise.rms_norm.torch.{tag}", s[2] * 1e3, "ms")
    x = torch.randn(4096, 128)

    def sum_last():
        with torch.no_grad():
            x.sum(dim=-1)

    def sum_first():
        with torch.no_grad():
            x.sum(dim=0)

    s = interleaved([sum_last, sum_first], opts.budget)
    emit("rowwise.sum_last.torch.4096x128", s[0] * 1e6, "us")
    emit("rowwise.sum_first.torch.4096x128", s[1] * 1e6, "us")

    # rotary embeddings, Hugging Face's LLaMA form: (T, hs) tables built once, no gradient
    inv = 10000.0 ** (-torch.arange(0, 64, 2, dtype=torch.float64) / 64)
    ang = torch.arange(256, dtype=torch.float64)[:, None] * inv[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1).float()
    sin = torch.cat([ang.sin(), ang.sin()], -1).float()
    q = torch.randn(8, 8, 256, 64, requires_grad=True)
    gq = torch.randn(8, 8, 256, 64)

    def rotary():
        q.grad = None
        rot = torch.cat([-q[..., 32:], q[..., :32]], -1)
        (q * cos + rot * sin).backward(gq)

    s = interleaved([rotary], opts.budget)
    emit("rowwise.rope.torch.8x8x256x64", s[0] * 1e3, "ms")


GROUPS = {"matmul": bench_matmul, "tiny": bench_tiny, "mha": bench_mha, "train": bench_train,
          "unary": bench_unary, "rowwise": bench_rowwise, "gpt": bench_gpt, "nanogpt": bench_nanogpt}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budget", type=float, default=0.8, help="seconds per group of candidates")
    p.add_argument("--filter", default="", help="run only groups whose name contains this")
    p.add_argument("--threads", type=int, default=1, help="torch.set_num_threads (run.sh: 1, or 2)")
    p.add_argument("--one", nargs=2, metavar=("KIND", "T"),
                   help="one local-attention configuration in this process: blk|loop|dense T")
    opts = p.parse_args()
    torch.set_num_threads(opts.threads)
    torch.manual_seed(0)
    if opts.one:
        return run_one(opts.one[0], int(opts.one[1]), opts.budget)
    print(f"# bench_torch: torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    for name, fn in GROUPS.items():
        if opts.filter in name:
            fn(opts)


if __name__ == "__main__":
    sys.exit(main())
