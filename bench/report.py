"""bench/report.py — turns the rounds of bench/run.sh into one table.

Input lines: `<round> metric <name> <value> <unit>` (round 0 is the warm-up and is dropped);
anything else is ignored. For each row the table shows the medians over rounds of the tapegrad
value and of its baseline, and the ratio tapegrad / baseline computed per round, as median
[min, max]. A row's goal applies to the ratio ("ratio") or to the tapegrad value ("value").
Adding a row: append to ROWS; the metrics come from bench.cpp and bench_torch.py.
"""
import collections
import os
import statistics
import sys

SIZES = (64, 128, 256, 512, 1024, 2048)

# (label, tapegrad metric, baseline metric, baseline name, goal, reference metric)
# goal: (what, op, bound) with what "ratio" (tapegrad / baseline) or "value" (tapegrad alone).
ROWS = []
for n in SIZES:
    ROWS.append((f"matmul f32 {n}^3 GFLOP/s", f"matmul.tg.{n}", f"matmul.blas.{n}", "sgemm",
                 ("ratio", ">=", 0.95), f"matmul.torch.{n}"))
# bf16 GEMMs against tapegrad's own float32 matmul (the goal: 1.7x on AVX512-BF16 CPUs; 4x on
# AMX CPUs); PyTorch 1.13's bf16 matmul (the same oneDNN) as the reference.
for n in (512, 1024, 2048):
    ROWS.append((f"bf16 GEMM {n}^3 GFLOP/s", f"half_gemm.tg.bf16.{n}", f"half_gemm.tg.f32.{n}", "tg f32",
                 ("ratio", ">=", 1.7), f"half_gemm.torch.bf16.{n}"))
# The bf16 fused attention (AVX512-BF16 dot products) against the float32 one, fwd+bwd, B 1, 8
# heads, hs 64 (bench/attention_bf16.cpp). The goal, >= 2x faster, is for AMX CPUs; no
# goal is checked here, the ratio is shown.
for mask in ("causal", "local128"):
    for t in (1024, 2048, 4096, 8192):
        ROWS.append((f"bf16 attention fwd+bwd {mask} T{t} ms", f"attention_bf16.{mask}.{t}.bf16_dot",
                     f"attention_bf16.{mask}.{t}.f32", "tg f32", None, None))
MHA_SIZES = ("32x64x128x4", "8x256x256x8", "2x1024x512x8")  # B x T x E x NH
for tag in MHA_SIZES:
    for m in ("none", "causal", "pad", "cross"):
        ROWS.append((f"MHA fwd+bwd {tag} {m} ms", f"mha.{m}.tg.{tag}", f"mha.{m}.torch.{tag}", "torch",
                     ("ratio", "<=", 0.6), None))
    for m in ("self", "cross"):  # tapegrad only: CPU peak memory of one forward (tg::cpu_memory)
        ROWS.append((f"MHA fwd peak {tag} {m} MiB", f"mha.peak_fwd.{m}.tg.{tag}", None, "", None, None))
ROWS += [
    ("train step enc-classifier ms", "train.enc.tg", "train.enc.torch", "torch", ("ratio", "<=", 0.8), None),
    ("train step seq2seq ms", "train.s2s.tg", "train.s2s.torch", "torch", ("ratio", "<=", 0.8), None),
    ("train step gpt ms", "train.gpt.tg", "train.gpt.torch", "torch", ("ratio", "<=", 0.75), None),
    ("train step nanogpt (4L C128 T64 B12) ms", "train.nanogpt.tg", "train.nanogpt.torch", "torch",
     ("ratio", "<=", 0.7), None),
    ("mul 4 elems fwd us", "tiny.fwd.tg", "tiny.fwd.torch", "torch", None, None),
    ("mul 4 elems fwd+bwd us", "tiny.fwd_bwd.tg", "tiny.fwd_bwd.torch", "torch", ("value", "<=", 1.0), None),
    ("10 chained mul fwd+bwd us", "chain10.fwd_bwd.tg", "chain10.fwd_bwd.torch", "torch", None, None),
    ("5-view chain 64x64 us", "views.chain.tg.64", "views.chain.torch.64", "torch", None, None),
    ("5-view chain 4096x4096 us", "views.chain.tg.4096", "views.chain.torch.4096", "torch", None, None),
]
UNARY_TAG = "16x256x1024"
for op, label in (("gelu", "gelu"), ("gelu_tanh", "gelu tanh"), ("tanh", "tanh"), ("exp", "exp"),
                  ("sigmoid", "sigmoid"), ("silu", "silu")):
    for m, what in (("fwd", "fwd"), ("fwd_bwd", "fwd+bwd")):
        ROWS.append((f"{label} {what} {UNARY_TAG} ms", f"unary.{op}.{m}.tg", f"unary.{op}.{m}.torch", "torch",
                     ("ratio", "<=", 1.0), None))
ROWS.append(("SwiGLU block fwd+bwd 16x128x256 (hidden 688) ms", "unary.swiglu.fwd_bwd.tg",
             "unary.swiglu.fwd_bwd.torch", "torch", ("ratio", "<=", 1.0), None))
ROW_SIZES = ("4096x128", "512x1024")  # N x C, over the last dim
for tag in ROW_SIZES:
    for op, goal in (("softmax", 0.8), ("layer_norm", 0.8), ("rms_norm", 0.7)):
        ROWS.append((f"{op} fwd+bwd {tag} ms", f"rowwise.{op}.tg.{tag}", f"rowwise.{op}.torch.{tag}", "torch",
                     ("ratio", "<=", goal), None))
for op, label in (("sum_last", "sum dim -1"), ("sum_first", "sum dim 0")):
    ROWS.append((f"{label} fwd 4096x128 us", f"rowwise.{op}.tg.4096x128", f"rowwise.{op}.torch.4096x128",
                 "torch", ("ratio", "<=", 1.0), None))
ROWS.append(("rope fwd+bwd 8x8x256x64 ms", "rowwise.rope.tg.8x8x256x64", "rowwise.rope.torch.8x8x256x64",
             "torch", ("ratio", "<=", 0.8), None))
# Second order and checkpointing (bench/higher.cpp), against tapegrad's own first-order step.
ROWS += [
    ("HVP gpt-style d256 L4 T256 B16 vs step ms", "higher.hvp.T256", "higher.step.T256", "step",
     ("ratio", "<=", 3.0), None),
    ("HVP peak T4096 window 128 vs step MiB", "higher.hvp_peak.T4096", "higher.step_peak.T4096",
     "step", ("ratio", "<=", 2.5), None),
    ("HVP T4096 window 128 vs step ms", "higher.hvp.T4096", "higher.step.T4096", "step", None, None),
    ("checkpointed step peak T4096 window 128 vs step MiB", "higher.ckpt_peak.T4096",
     "higher.step_peak.T4096", "step", ("ratio", "<=", 1 / 3), None),
    ("checkpointed step T4096 window 128 vs step ms", "higher.ckpt.T4096", "higher.step.T4096",
     "step", ("ratio", "<=", 1.35), None),
]
# Grouped-query SDPA (enable_gqa, k and v read in place) against the same call with them repeated.
for m in ("none", "causal"):
    ROWS.append((f"GQA SDPA fwd+bwd 8x256 8q/2kv hs 64 {m} vs repeated k/v ms", f"gqa.{m}.gqa",
                 f"gqa.{m}.repeated", "repeated", ("ratio", "<=", 0.8), None))
# Each kernel family's AVX-512 variant against the build's own on this CPU (tapegrad only): the
# figures behind ops/core/cpu/isa.cpp's per-CPU preference list (a ratio < 1: AVX-512 is faster).
for fam, what in (("softmax", "softmax fwd+bwd 4096x128"), ("unary", "gelu+tanh+sigmoid+exp 4x256x1024"),
                  ("attention", "SDPA none+causal 8x8x256x64"),
                  ("reduce", "sum dim 0 4096x128 + mean dim 1 64x512x128")):
    ROWS.append((f"{fam} variant avx512 vs native: {what} ms", f"variants.{fam}.avx512",
                 f"variants.{fam}.native", "native", None, None))


def load(path):
    data = collections.defaultdict(dict)  # metric -> round -> value
    units = {}
    with open(path) as f:
        for line in f:
            parts = line.split()
            if len(parts) == 5 and parts[1] == "metric" and parts[0] != "0":
                data[parts[2]][int(parts[0])] = float(parts[3])
                units[parts[2]] = parts[4]
    return data, units


def fmt_num(v):
    return "n/a" if v is None else (f"{v:.3g}" if abs(v) < 10 else f"{v:.1f}")


def row_cells(row, data):
    label, a, b, b_name, goal, ref = row
    av, bv = data.get(a, {}), data.get(b, {})
    a_med = statistics.median(av.values()) if av else None
    b_med = statistics.median(bv.values()) if bv else None
    ratios = [av[r] / bv[r] for r in av if r in bv and bv[r] > 0]
    ratio = (f"{statistics.median(ratios):.3f} [{min(ratios):.3f}, {max(ratios):.3f}]"
             if ratios else "n/a")
    verdict, goal_s = "", ""
    if goal:
        what, op, bound = goal
        goal_s = f"{what} {op} {bound:g}"
        x = statistics.median(ratios) if what == "ratio" and ratios else (a_med if what == "value" else None)
        if x is not None:
            ok = x >= bound if op == ">=" else x <= bound
            verdict = "ok" if ok else "MISS"
    ref_v = statistics.median(data[ref].values()) if ref and data.get(ref) else None
    ref_s = f"torch {fmt_num(ref_v)}" if ref else ""
    return [label, fmt_num(a_med), f"{fmt_num(b_med)} {b_name}", ratio, goal_s, verdict, ref_s]


LOCAL_T = (1024, 2048, 4096, 8192, 16384)
GOAL_T = 8192


def med(data, m):
    v = data.get(m, {})
    return statistics.median(v.values()) if v else None


def ratio(data, a, b):
    """(median, min, max) of a / b over the rounds holding both, or None."""
    av, bv = data.get(a, {}), data.get(b, {})
    rs = [av[r] / bv[r] for r in av if r in bv and bv[r] > 0]
    return (statistics.median(rs), min(rs), max(rs)) if rs else None


def fmt_ratio(r):
    return "n/a" if r is None else f"{r[0]:.3g} [{r[1]:.3g}, {r[2]:.3g}]"


def print_table(table):
    widths = [max(len(line[i]) for line in table) for i in range(len(table[0]))]
    for i, line in enumerate(table):
        print("  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(line, widths))).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))


def local_report(data):
    """Local attention (NH 4, hs 64, window (64, 64), B 1, f32), one fresh process per cell.
    torch blk: the band via unfold, batched; torch loop: a Python loop over query blocks."""
    ts = [T for T in LOCAL_T if any(f"local.{k}.{T}.ms" in data
                                    for k in ("local.tg", "dense.tg", "blk.torch", "loop.torch", "dense.torch"))]
    if not ts:
        return
    rounds = sorted({r for m, v in data.items() if m.startswith("local.") for r in v})
    L, D, BK, LP, TD = ("local.local.tg", "local.dense.tg", "local.blk.torch", "local.loop.torch",
                        "local.dense.torch")
    print()
    print(f"local attention fwd+bwd, NH 4, hs 64, window (64, 64), B 1, f32: {len(rounds)} rounds, one "
          "fresh process per cell; time = median ms; mem = peak RSS (ru_maxrss) MiB; "
          "ratios per round, median [min, max]")
    head = ["T", "tg local", "tg dense", "dense/local", "torch blk", "local/blk", "torch loop",
            "local/loop", "torch dense", "local MiB", "dense MiB", "dense/local", "blk MiB", "loop MiB",
            "torch dense MiB"]
    table = [head]
    for T in ts:
        c = lambda k, u: fmt_num(med(data, f"{k}.{T}.{u}"))
        table.append([str(T), c(L, "ms"), c(D, "ms"), fmt_ratio(ratio(data, f"{D}.{T}.ms", f"{L}.{T}.ms")),
                      c(BK, "ms"), fmt_ratio(ratio(data, f"{L}.{T}.ms", f"{BK}.{T}.ms")),
                      c(LP, "ms"), fmt_ratio(ratio(data, f"{L}.{T}.ms", f"{LP}.{T}.ms")), c(TD, "ms"),
                      c(L, "mib"), c(D, "mib"), fmt_ratio(ratio(data, f"{D}.{T}.mib", f"{L}.{T}.mib")),
                      c(BK, "mib"), c(LP, "mib"), c(TD, "mib")])
    print_table(table)

    # Linear growth of tapegrad local: time per 1k T, memory above the process's start per 1k T,
    # and the increment between successive T (constant when memory grows linearly).
    print()
    head = ["T", "tg local ms per 1k T", "MiB above start", "MiB per 1k T", "increment MiB per 1k T"]
    table, prev = [head], None
    per_t, incr = {}, {}
    for T in ts:
        ms, peak, base = (med(data, f"{L}.{T}.{u}") for u in ("ms", "mib", "base"))
        if ms is None or peak is None or base is None:
            continue
        above = peak - base
        per_t[T] = ms / (T / 1000)
        inc = (above - prev[1]) / ((T - prev[0]) / 1000) if prev else None
        if inc is not None:
            incr[T] = inc
        table.append([str(T), fmt_num(per_t[T]), fmt_num(above), fmt_num(above / (T / 1000)), fmt_num(inc)])
        prev = (T, above)
    print_table(table)

    print()
    goals = []
    g = ratio(data, f"{D}.{GOAL_T}.ms", f"{L}.{GOAL_T}.ms")
    goals.append((f"T={GOAL_T}: tg local >= 20x faster than tg dense masked", g, lambda x: x >= 20))
    g = ratio(data, f"{D}.{GOAL_T}.mib", f"{L}.{GOAL_T}.mib")
    goals.append((f"T={GOAL_T}: tg local >= 10x less peak memory than tg dense masked", g, lambda x: x >= 10))
    g = ratio(data, f"{BK}.{GOAL_T}.ms", f"{L}.{GOAL_T}.ms")
    goals.append((f"T={GOAL_T}: tg local faster than torch blockwise, unfold (blk/local > 1)", g,
                  lambda x: x > 1))
    g = ratio(data, f"{LP}.{GOAL_T}.ms", f"{L}.{GOAL_T}.ms")
    goals.append((f"T={GOAL_T}: tg local faster than torch blockwise, Python loop (loop/local > 1)", g,
                  lambda x: x > 1))
    for label, r, ok in goals:
        print(f"  {label}: {fmt_ratio(r)}  {'n/a' if r is None else 'ok' if ok(r[0]) else 'MISS'}")
    big = [T for T in ts if T in per_t and T >= 2048]
    if len(big) >= 2:
        gr = per_t[big[-1]] / per_t[big[0]]
        print(f"  linear time: ms per 1k T at T={big[-1]} / at T={big[0]} = {gr:.3g} (<= 1.3)  "
              f"{'ok' if gr <= 1.3 else 'MISS'}")
    inc = [incr[T] for T in ts if T in incr and T >= 4096]
    if len(inc) >= 2:
        gr = max(inc) / min(inc) if min(inc) > 0 else float("inf")
        print(f"  linear memory: increment MiB per 1k T from T=2048 on, max / min = {gr:.3g} (<= 1.3)  "
              f"{'ok' if gr <= 1.3 else 'MISS'}")


# The rows run again at 2 threads (run.sh: metrics prefixed "t2."): goal, each 2-thread ratio <= its
# 1-thread ratio; the GPT step >= 1.7x faster at 2 threads than at 1; nanoGPT's step <= 0.7.
T2_ROWS = [("train step enc-classifier", "train.enc"), ("train step seq2seq", "train.s2s"),
           ("train step gpt", "train.gpt"), ("train step nanogpt", "train.nanogpt")]
for tag in MHA_SIZES:
    for m in ("none", "causal", "pad", "cross"):
        T2_ROWS.append((f"MHA fwd+bwd {tag} {m}", f"mha.{m}", tag))


def two_thread_report(data):
    if not any(m.startswith("t2.") for m in data):
        return
    print()
    policy = os.environ.get("T2_POLICY", "?")
    print(f"2 threads (OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 OMP_WAIT_POLICY={policy}, "
          "torch.set_num_threads(2)), ms, medians "
          "over rounds; ratios per round, median [min, max]; goal: the 2-thread tg/torch ratio <= the "
          "1-thread one")
    head = ["row", "tg 2t", "torch 2t", "tg/torch 2t", "tg/torch 1t", "goal", "tg 1t/2t", "torch 1t/2t"]
    table, verdicts = [head], []
    for row in T2_ROWS:
        label, stem = row[0], row[1]
        suffix = f".{row[2]}" if len(row) > 2 else ""
        tg1, th1 = f"{stem}.tg{suffix}", f"{stem}.torch{suffix}"
        tg2, th2 = f"t2.{tg1}", f"t2.{th1}"
        if tg2 not in data:
            continue
        r2, r1 = ratio(data, tg2, th2), ratio(data, tg1, th1)
        ok = "n/a" if r2 is None or r1 is None else ("ok" if r2[0] <= r1[0] else "MISS")
        if stem == "train.nanogpt" and r2 is not None:
            ok += f"; <= 0.7 {'ok' if r2[0] <= 0.7 else 'MISS'}"
        sp = ratio(data, tg1, tg2)
        if stem == "train.gpt" and sp is not None:
            verdicts.append(f"  GPT step 1 thread / 2 threads = {fmt_ratio(sp)} (>= 1.7)  "
                            f"{'ok' if sp[0] >= 1.7 else 'MISS'}")
        table.append([label, fmt_num(med(data, tg2)), fmt_num(med(data, th2)), fmt_ratio(r2), fmt_ratio(r1),
                      ok, fmt_ratio(sp), fmt_ratio(ratio(data, th1, th2))])
    print_table(table)
    for v in verdicts:
        print(v)


def main():
    data, _ = load(sys.argv[1])
    rounds = sorted({r for m, v in data.items() if not m.startswith("local.") for r in v})
    head = ["row", "tapegrad", "baseline", "tg/base median [min, max]", "goal", "", "reference"]
    rows = [r for r in ROWS if r[1] in data or r[2] in data]  # a FILTER run shows its rows only
    table = [head] + [row_cells(r, data) for r in rows]
    widths = [max(len(line[i]) for line in table) for i in range(len(head))]
    note = f", {sys.argv[2]}" if len(sys.argv) > 2 else ""
    if not rows:  # e.g. FILTER=local
        print(f"tapegrad benchmarks: 1 thread{note}")
        two_thread_report(data)
        local_report(data)
        return
    print(f"tapegrad benchmarks: {len(rounds)} rounds, 1 thread{note}; medians over rounds; ratio = tapegrad / "
          "baseline per round (GFLOP/s: higher is better; us, ms: lower is better)")
    for i, line in enumerate(table):
        print("  ".join(c.ljust(w) if j == 0 else c.rjust(w) if j in (1, 2) else c.ljust(w)
                        for j, (c, w) in enumerate(zip(line, widths))).rstrip())
        if i == 0:
            print("  ".join("-" * w for w in widths))
    two_thread_report(data)
    local_report(data)


if __name__ == "__main__":
    main()
