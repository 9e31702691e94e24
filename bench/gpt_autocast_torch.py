"""bench/gpt_autocast_torch.py — the PyTorch 1.13 twin of bench_gpt_autocast (bench/gpt_autocast.cpp):
the GPT-style training step of bench_torch.py's `gpt` group (same model class, AdamW lr 3e-4 weight
decay 0.1 after clip_grad_norm_(1.0)) in float32 or with its forward and loss under
torch.autocast("cpu", dtype=torch.bfloat16), one configuration per process so that the peak RSS
(ru_maxrss) is that configuration's. One thread (torch.set_num_threads(1); run with
OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 as bench/gpt_autocast.sh does):
    /usr/bin/python3 bench/gpt_autocast_torch.py --one f32|bf16 [--budget s]
Prints `metric gpt_amp.torch.<mode>[.cpu|.mib|.base] <value> <unit>`: the median step (wall and
process CPU time), the peak RSS and the RSS after `import torch`, before the model was made.
"""
import argparse
import contextlib
import os
import resource
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(__file__))
from bench_torch import GPT, emit  # noqa: E402


def maxrss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--one", choices=("f32", "bf16"), required=True)
    p.add_argument("--budget", type=float, default=4.0)
    opts = p.parse_args()
    torch.set_num_threads(1)
    base = maxrss_mib()
    torch.manual_seed(0)
    F = torch.nn.functional
    m = GPT().train()
    tokens = torch.randint(0, GPT.V, (GPT.B, GPT.T))
    gold = torch.randint(0, GPT.V, (GPT.B * GPT.T,))
    opt = torch.optim.AdamW(m.parameters(), lr=3e-4, weight_decay=0.1)

    def loss():
        ctx = (torch.autocast("cpu", dtype=torch.bfloat16) if opts.one == "bf16"
               else contextlib.nullcontext())
        with ctx:
            return F.cross_entropy(m(tokens).reshape(GPT.B * GPT.T, GPT.V), gold)

    def step():
        opt.zero_grad(set_to_none=True)
        loss().backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 1.0)
        opt.step()

    n = sum(q.numel() for q in m.parameters())
    print(f"# train GPT: {n} parameters, first loss {loss().item():.4f}")
    step()  # warm-up
    t, cpu, t0 = [], [], time.perf_counter()
    while len(t) < 3 or (time.perf_counter() - t0 < opts.budget and len(t) < 15):
        s, c = time.perf_counter(), time.process_time()
        step()
        t.append(time.perf_counter() - s)
        cpu.append(time.process_time() - c)
    emit(f"gpt_amp.torch.{opts.one}", statistics.median(t) * 1e3, "ms")
    emit(f"gpt_amp.torch.{opts.one}.cpu", statistics.median(cpu) * 1e3, "ms")
    emit(f"gpt_amp.torch.{opts.one}.mib", maxrss_mib(), "MiB")
    emit(f"gpt_amp.torch.{opts.one}.base", base, "MiB")


if __name__ == "__main__":
    main()
