"""bench/bench_torch.py — the PyTorch twin of bench_tapegrad (run with /usr/bin/python3, torch 1.13).

Prints `metric <name> <value> <unit>` lines with the same names as bench/bench.cpp, `torch` in
place of `tg`. Measures the same way: warm-up, calibrated batches, candidates interleaved, median.
bench/run.sh pins OMP_NUM_THREADS / OPENBLAS_NUM_THREADS before starting us; we also call
torch.set_num_threads(1) (it does not reach OpenBLAS's own pool, hence the environment).
Adding a benchmark: a function that calls emit(), listed in GROUPS, and a row in report.py.
"""
import argparse
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


GROUPS = {"matmul": bench_matmul, "tiny": bench_tiny}


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--budget", type=float, default=0.8, help="seconds per group of candidates")
    p.add_argument("--filter", default="", help="run only groups whose name contains this")
    opts = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    print(f"# bench_torch: torch {torch.__version__}, {torch.get_num_threads()} thread(s)")
    for name, fn in GROUPS.items():
        if opts.filter in name:
            fn(opts)


if __name__ == "__main__":
    sys.exit(main())
