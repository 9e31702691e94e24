"""bench/bench_torch_cuda.py — PyTorch on the same GPU, the reference for bench/bench_cuda.cpp.

Prints `metric <name> <value> <unit>` lines: scaled_dot_product_attention forward and
forward+backward TFLOP/s for (4, 16, T, 64), full and causal, in float32 (PyTorch picks its
memory-efficient kernel: flash needs half precision) and in bfloat16 with the flash backend
forced; FlexAttention's sliding window (128, 0) in float32 and bfloat16; and one training step of
the same small classifier. FLOPs are counted like bench_cuda.cpp. Needs torch with CUDA
(the GPU machine's python3); anything unavailable prints a `skip` line instead of failing.
"""
import sys
import time

import torch
import torch.nn.functional as F


def emit(name, value, unit):
    print(f"metric {name} {value:.6g} {unit}", flush=True)


def time_it(f, reps):
    f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        f()
        torch.cuda.synchronize()
        ts.append(time.perf_counter() - t0)
    ts.sort()
    return ts[len(ts) // 2]


def pairs(kind, T):
    return {"full": T * T, "causal": T * (T + 1) / 2, "local": T * 129 - 128 * 129 / 2}[kind]


def sdpa_case(kind, T, dtype, backend_name):
    B, NH, hs = 4, 16, 64
    q, k, v = (torch.randn(B, NH, T, hs, device="cuda", dtype=dtype, requires_grad=True)
               for _ in range(3))
    g = torch.randn(B, NH, T, hs, device="cuda", dtype=dtype)
    causal = kind == "causal"
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backend = {"flash": SDPBackend.FLASH_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION}
    reps = 3 if T >= 8192 else 10

    def fwd():
        with torch.no_grad(), sdpa_kernel(backend[backend_name]):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal)

    def fb():
        with sdpa_kernel(backend[backend_name]):
            F.scaled_dot_product_attention(q, k, v, is_causal=causal).backward(g)

    f = 4.0 * B * NH * hs * pairs(kind, T)
    tag = f"torch_{backend_name}_{str(dtype).split('.')[-1]}_attn_{kind}_T{T}"
    emit(tag + "_fwd", f / time_it(fwd, reps) / 1e12, "TFLOP/s")
    emit(tag + "_fwdbwd", 3.5 * f / time_it(fb, reps) / 1e12, "TFLOP/s")


def flex_case(T, dtype):
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    B, NH, hs = 4, 16, 64

    def sliding(b, h, q_idx, kv_idx):
        return (q_idx - kv_idx <= 128) & (kv_idx <= q_idx)

    bm = create_block_mask(sliding, None, None, T, T, device="cuda")
    fa = torch.compile(flex_attention)
    q, k, v = (torch.randn(B, NH, T, hs, device="cuda", dtype=dtype, requires_grad=True)
               for _ in range(3))
    g = torch.randn(B, NH, T, hs, device="cuda", dtype=dtype)
    reps = 3 if T >= 8192 else 10

    def fwd():
        with torch.no_grad():
            fa(q, k, v, block_mask=bm)

    def fb():
        fa(q, k, v, block_mask=bm).backward(g)

    f = 4.0 * B * NH * hs * pairs("local", T)
    tag = f"torch_flex_{str(dtype).split('.')[-1]}_attn_local_T{T}"
    emit(tag + "_fwd", f / time_it(fwd, reps) / 1e12, "TFLOP/s")
    emit(tag + "_fwdbwd", 3.5 * f / time_it(fb, reps) / 1e12, "TFLOP/s")


def train_step():
    torch.manual_seed(0)
    layer = lambda: torch.nn.TransformerEncoderLayer(64, 4, 256, 0.1, activation="gelu",
                                                     batch_first=True, norm_first=True)
    model = torch.nn.ModuleDict({"emb": torch.nn.Embedding(6000, 64), "l1": layer(),
                                 "l2": layer(), "head": torch.nn.Linear(64, 2)}).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
    x = torch.randint(0, 6000, (32, 256), device="cuda")
    y = torch.randint(0, 2, (32,), device="cuda")

    def step():
        opt.zero_grad()
        h = model["l2"](model["l1"](model["emb"](x)))
        F.cross_entropy(model["head"](h.mean(1)), y).backward()
        opt.step()

    emit("torch_train_classifier_step", time_it(step, 20) * 1e3, "ms")


def main():
    if not torch.cuda.is_available():
        print("skip: torch sees no CUDA device")
        return
    torch.backends.cuda.matmul.allow_tf32 = False
    Ts = [int(sys.argv[1])] if len(sys.argv) > 1 else [1024, 2048, 4096, 8192, 16384]
    for name, fn in [("train", train_step)]:
        try:
            fn()
        except Exception as e:  # noqa: BLE001 - report and go on
            print(f"skip: {name}: {e}")
    for kind in ["full", "causal"]:
        for T in Ts:
            for dtype, backend in [(torch.float32, "efficient"), (torch.bfloat16, "flash")]:
                try:
                    sdpa_case(kind, T, dtype, backend)
                except Exception as e:  # noqa: BLE001
                    print(f"skip: sdpa {kind} T={T} {dtype} {backend}: {e}")
    for T in Ts:
        for dtype in [torch.float32, torch.bfloat16]:
            try:
                flex_case(T, dtype)
            except Exception as e:  # noqa: BLE001
                print(f"skip: flex T={T} {dtype}: {e}")


if __name__ == "__main__":
    main()
