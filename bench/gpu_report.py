"""bench/gpu_report.py — one table from bench_cuda.cpp's and bench_torch_cuda.py's metric lines.

usage: python3 bench/gpu_report.py bench_tg.txt bench_torch.txt
Attention rows: tapegrad float32 forward+backward TFLOP/s beside PyTorch's float32 SDPA
(memory-efficient kernel), bfloat16 flash SDPA and FlexAttention (local), with tapegrad / flash
and tapegrad / flex ratios (goals: >= 0.5x flash for full and causal; > 1x flex for local).
"""
import sys


def read(path):
    m = {}
    try:
        for line in open(path):
            p = line.split()
            if len(p) >= 3 and p[0] == "metric":
                m[p[1]] = float(p[2])
    except OSError:
        pass
    return m


def fmt(v):
    return f"{v:8.2f}" if v is not None else "       -"


def main():
    tg, th = read(sys.argv[1]), read(sys.argv[2])
    print("attention (4, 16, T, 64), forward+backward TFLOP/s")
    print(f"{'mask':7} {'T':>6} | {'tg f32':>8} | {'torch f32':>9} {'flash bf16':>10} "
          f"{'flex f32':>8} {'flex bf16':>9} | {'tg/flash':>8} {'tg/flex32':>9}")
    for kind in ["full", "causal", "local"]:
        for T in [1024, 2048, 4096, 8192, 16384]:
            t = tg.get(f"tg_attn_{kind}_T{T}_fwdbwd")
            if t is None:
                continue
            e32 = th.get(f"torch_efficient_float32_attn_{kind}_T{T}_fwdbwd")
            fl = th.get(f"torch_flash_bfloat16_attn_{kind}_T{T}_fwdbwd")
            x32 = th.get(f"torch_flex_float32_attn_{kind}_T{T}_fwdbwd")
            x16 = th.get(f"torch_flex_bfloat16_attn_{kind}_T{T}_fwdbwd")
            r1 = t / fl if fl else None
            r2 = t / x32 if x32 else None
            print(f"{kind:7} {T:6} | {fmt(t)} | {fmt(e32)} {fmt(fl):>10} {fmt(x32)} {fmt(x16):>9} "
                  f"| {fmt(r1)} {fmt(r2):>9}")
    a, b = tg.get("tg_train_classifier_step"), th.get("torch_train_classifier_step")
    print(f"\nclassifier training step (B 32, T 256, C 64, 2 layers): tapegrad {fmt(a)} ms, "
          f"PyTorch {fmt(b)} ms, ratio {fmt(a / b if a and b else None)}")


if __name__ == "__main__":
    main()
