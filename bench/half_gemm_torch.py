"""bench/half_gemm_torch.py — the PyTorch 1.13 twin of bench_half_gemm (bench/half_gemm.cpp): GFLOP/s
of torch.matmul on bfloat16 and float32 n x n tensors, n = 512, 1024, 2048, one thread
(torch.set_num_threads(1); run with OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 as bench/run.sh does),
interleaved, median batch. Run with Debian's /usr/bin/python3:
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 /usr/bin/python3 bench/half_gemm_torch.py
PyTorch 1.13 has no CPU float16 matmul: no f16 rows.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from bench_torch import emit, interleaved  # noqa: E402


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--budget", type=float, default=0.8)
    opts = p.parse_args()
    torch.set_num_threads(1)
    torch.manual_seed(0)
    for n in (512, 1024, 2048):
        a, b = torch.randn(n, n), torch.randn(n, n)
        ab, bb = a.bfloat16(), b.bfloat16()
        s = interleaved([lambda: torch.matmul(a, b), lambda: torch.matmul(ab, bb)], opts.budget,
                        3 if n >= 1024 else 5)
        flop = 2.0 * n ** 3
        emit(f"half_gemm.torch.f32.{n}", flop / s[0] * 1e-9, "GFLOP/s")
        emit(f"half_gemm.torch.bf16.{n}", flop / s[1] * 1e-9, "GFLOP/s")


if __name__ == "__main__":
    main()
