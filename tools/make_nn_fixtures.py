#!/usr/bin/python3
"""tools/make_nn_fixtures.py — PyTorch reference values for tests/nn/test_optim.cpp and
tests/nn/test_schedule_clip.cpp, float64, one file per case (through tools/fixture_io.py):

Run with Debian's torch (1.13, CPU):  /usr/bin/python3 tools/make_nn_fixtures.py [--out DIR]
Files under tests/fixtures/ (tensors in brackets):
  nn_optim/problem.safetensors  [W, b, X, Y] the fixed problem: loss = sum((X·Wᵀ + b - Y)²),
                                W (3,4), b (3)
  nn_optim/<opt>.safetensors    [W, b] after STEPS (20) steps of each optimizer on that loss,
                                [loss] the loss before each of the STEPS steps
  nn_sched/<name>.safetensors   [lr] get_last_lr() after construction and after each step (group 0)
  nn_clip/inputs.safetensors    [g0, g1] two fixed gradients;
  nn_clip/<case>.safetensors    [total (not for value), g0, g1] the results
Everything is deterministic (fixed values, seeded generators), so reruns give the same bytes.
"""
import argparse
import math
import os

import numpy as np
import torch

import fixture_io

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, "..", "tests", "fixtures"))
STEPS = 20  # optimizer trajectory length (the issue asks for 20 steps matching PyTorch)


def f64(arr):
    return arr.detach().numpy() if isinstance(arr, torch.Tensor) else np.asarray(arr, dtype=np.float64)


def save(family, case, tensors):
    fixture_io.write(fixture_io.case_path(OUT, family, case), {n: f64(t) for n, t in tensors.items()})


def randn(*shape, seed):
    return torch.randn(*shape, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


def problem():
    W = torch.linspace(-1.0, 1.0, 12, dtype=torch.float64).reshape(3, 4)
    b = torch.tensor([0.1, -0.2, 0.3], dtype=torch.float64)
    X = randn(5, 4, seed=11)
    Y = randn(5, 3, seed=12)
    return W, b, X, Y


def run_optimizer(name, make):
    W0, b0, X, Y = problem()
    W, b = W0.clone().requires_grad_(), b0.clone().requires_grad_()
    opt = make(W, b)
    losses = []
    for _ in range(STEPS):
        opt.zero_grad()
        loss = ((X @ W.T + b - Y) ** 2).sum()
        losses.append(loss.item())
        loss.backward()
        opt.step()
    save("nn_optim", name, {"W": W, "b": b, "loss": losses})


def optimizers():
    W, b, X, Y = problem()
    save("nn_optim", "problem", {"W": W, "b": b, "X": X, "Y": Y})
    run_optimizer("sgd_momentum", lambda W, b: torch.optim.SGD([W, b], lr=0.01, momentum=0.9))
    run_optimizer("sgd", lambda W, b: torch.optim.SGD([W, b], lr=0.01, momentum=0.9, nesterov=True,
                                                        weight_decay=0.1))
    run_optimizer("sgd_damp", lambda W, b: torch.optim.SGD([W, b], lr=0.01, momentum=0.8, dampening=0.3,
                                                             weight_decay=0.05))
    run_optimizer("adam", lambda W, b: torch.optim.Adam([W, b], lr=0.05, betas=(0.8, 0.95), weight_decay=0.1))
    run_optimizer("adam_amsgrad", lambda W, b: torch.optim.Adam([W, b], lr=0.05, amsgrad=True))
    run_optimizer("adamw", lambda W, b: torch.optim.AdamW([W, b], lr=0.05))
    # Groups: no weight decay and a smaller lr on the bias.
    run_optimizer("adamw_groups", lambda W, b: torch.optim.AdamW(
        [{"params": [W]}, {"params": [b], "weight_decay": 0.0, "lr": 0.02}], lr=0.05, weight_decay=0.1,
        amsgrad=True))


def cosine_lambda(warmup, total, min_ratio):
    def f(step):
        if step < warmup:
            return step / max(1, warmup)
        progress = min(1.0, (step - warmup) / max(1, total - warmup))
        return min_ratio + (1.0 - min_ratio) * 0.5 * (1.0 + math.cos(math.pi * progress))
    return f


def noam_lambda(d_model, warmup):
    def f(step):
        step = max(step, 1)
        return d_model ** -0.5 * min(step ** -0.5, step * warmup ** -1.5)
    return f


def schedule(name, base_lr, make, steps):
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=base_lr)
    sched = make(opt)
    lrs = [sched.get_last_lr()[0]]
    for _ in range(steps):
        opt.step()
        sched.step()
        lrs.append(sched.get_last_lr()[0])
    save("nn_sched", name, {"lr": lrs})


def schedulers():
    schedule("step", 0.1, lambda o: torch.optim.lr_scheduler.StepLR(o, step_size=3, gamma=0.5), 10)
    schedule("cosine", 0.1, lambda o: torch.optim.lr_scheduler.LambdaLR(o, cosine_lambda(3, 10, 0.1)), 12)
    schedule("noam", 2.0, lambda o: torch.optim.lr_scheduler.LambdaLR(o, noam_lambda(16, 4)), 10)


def clip_case(name, fn):
    g0, g1 = randn(3, 4, seed=21), randn(5, seed=22)
    p0, p1 = torch.zeros(3, 4, dtype=torch.float64), torch.zeros(5, dtype=torch.float64)
    p0.grad, p1.grad = g0.clone(), g1.clone()
    total = fn([p0, p1])
    tensors = {"g0": p0.grad, "g1": p1.grad}
    if total is not None:
        tensors["total"] = [float(total)]
    save("nn_clip", name, tensors)


def clipping():
    save("nn_clip", "inputs", {"g0": randn(3, 4, seed=21), "g1": randn(5, seed=22)})
    clip = torch.nn.utils
    clip_case("norm2", lambda ps: clip.clip_grad_norm_(ps, 1.0))
    clip_case("norm3", lambda ps: clip.clip_grad_norm_(ps, 0.5, norm_type=3.0))
    clip_case("norminf", lambda ps: clip.clip_grad_norm_(ps, 0.7, norm_type=math.inf))
    clip_case("noclip", lambda ps: clip.clip_grad_norm_(ps, 100.0))
    clip_case("value", lambda ps: clip.clip_grad_value_(ps, 0.5))


def main():
    global OUT
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=OUT, help="fixtures root (default: tests/fixtures)")
    OUT = ap.parse_args().out
    optimizers()
    schedulers()
    clipping()


if __name__ == "__main__":
    main()
