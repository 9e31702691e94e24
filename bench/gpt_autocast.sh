#!/usr/bin/env bash
# bench/gpt_autocast.sh — the GPT-style training step (d 256, 4 pre-norm layers, 8 heads, T 256,
# B 16, AdamW + clip_grad_norm_) in float32 and under bf16 autocast, tapegrad (bench_gpt_autocast)
# against PyTorch 1.13 (bench/gpt_autocast_torch.py), one thread, one fresh process per
# configuration so each reports its own peak RSS. One warm-up round (dropped), then ROUNDS rounds,
# each round tg f32, torch f32, tg bf16, torch bf16 in turn; ratios are taken per round.
# bf16 rows only where the CPU has avx512_bf16 or amx_bf16 (the `# cpu:` line names the CPU).
#   bash bench/gpt_autocast.sh                   ROUNDS=5, BUDGET=4 seconds per process
#   ROUNDS=3 BUDGET=3 bash bench/gpt_autocast.sh
# Environment: BUILD (default build-bench), JOBS, ROUNDS, BUDGET, PYTHON (default /usr/bin/python3).
# Each row shows the wall-clock ratio and the process-CPU-time ratio (the goal reads the wall ratio;
# the CPU-time one is steadier while other jobs share the cores). Raw lines are kept in $BUILD/gpt_autocast_raw.txt. Deliberately not here: the other rows
# (bench/run.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build-bench}
rounds=${ROUNDS:-5}
budget=${BUDGET:-4}
python=${PYTHON:-/usr/bin/python3}
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

if [[ ! -x $build/bench/bench_gpt_autocast ]]; then
  cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTG_BUILD_BENCH=ON -DTG_BUILD_TESTS=OFF \
        -DTG_BUILD_EXAMPLES=OFF -DTG_CUDA=OFF >/dev/null
fi
cmake --build "$build" -j "${JOBS:-1}" --target bench_gpt_autocast >/dev/null
have_torch=1
"$python" -c "import torch" 2>/dev/null || { have_torch=0; echo "no PyTorch at $python: torch rows read n/a" >&2; }
modes="f32"
grep -qw 'avx512_bf16\|amx_bf16' /proc/cpuinfo && modes="f32 bf16"

raw="$build/gpt_autocast_raw.txt"
: >"$raw"
for ((r = 0; r <= rounds; r++)); do
  echo "round $r/$rounds$([[ $r == 0 ]] && echo ' (warm-up, dropped)')" >&2
  for m in $modes; do
    "$build/bench/bench_gpt_autocast" --one "$m" --budget "$budget" | sed "s/^/$r /" >>"$raw"
    if [[ $have_torch == 1 ]]; then
      "$python" bench/gpt_autocast_torch.py --one "$m" --budget "$budget" | sed "s/^/$r /" >>"$raw"
    fi
  done
done

"$python" - "$raw" <<'PY'
import collections, statistics, sys
data, cpu = collections.defaultdict(dict), "?"
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 2 and f[1] == "#" and "cpu:" in line and cpu == "?":
        cpu = line.split("cpu:", 1)[1].strip()
    if len(f) == 5 and f[1] == "metric" and f[0] != "0":
        data[f[2]][int(f[0])] = float(f[3])
def med(m):
    return statistics.median(data[m].values()) if data.get(m) else None
def ratio(a, b):
    rs = [data[a][r] / data[b][r] for r in data.get(a, {}) if r in data.get(b, {})]
    return (statistics.median(rs), min(rs), max(rs)) if rs else None
def fr(x):
    return "n/a" if x is None else f"{x[0]:.3f} [{x[1]:.3f}, {x[2]:.3f}]"
def fv(x):
    return "n/a" if x is None else f"{x:.1f}"
print(f"GPT-style training step, 1 thread, cpu: {cpu}")
print(f"{'run':<6} {'tg ms':>8} {'torch ms':>8} {'tg/torch wall':>24} {'tg/torch CPU time':>24} "
      f"{'tg MiB':>7} {'torch MiB':>9}")
for m in ("f32", "bf16"):
    if f"gpt_amp.tg.{m}" not in data:
        continue
    print(f"{m:<6} {fv(med(f'gpt_amp.tg.{m}')):>8} {fv(med(f'gpt_amp.torch.{m}')):>8} "
          f"{fr(ratio(f'gpt_amp.tg.{m}', f'gpt_amp.torch.{m}')):>24} "
          f"{fr(ratio(f'gpt_amp.tg.{m}.cpu', f'gpt_amp.torch.{m}.cpu')):>24} "
          f"{fv(med(f'gpt_amp.tg.{m}.mib')):>7} {fv(med(f'gpt_amp.torch.{m}.mib')):>9}")
if "gpt_amp.tg.bf16" in data:
    amx = "amx_bf16 yes" in cpu
    goal = 0.75 if amx else 0.85
    for what, suffix in (("wall", ""), ("CPU time", ".cpu")):
        r = ratio(f"gpt_amp.tg.bf16{suffix}", f"gpt_amp.torch.bf16{suffix}")
        print(f"goal: tg bf16 / torch bf16 <= {goal} ({'AMX' if amx else 'AVX512-BF16'}), {what}: "
              f"{'n/a' if r is None else 'ok' if r[0] <= goal else 'MISS'}")
    a, b = med("gpt_amp.tg.bf16.mib"), med("gpt_amp.torch.bf16.mib")
    print(f"goal: tg bf16 peak RSS <= torch bf16 peak RSS: "
          f"{'n/a' if a is None or b is None else 'ok' if a <= b else 'MISS'}")
    print(f"tg bf16 / tg f32: {fr(ratio('gpt_amp.tg.bf16', 'gpt_amp.tg.f32'))}; "
          f"torch bf16 / torch f32: {fr(ratio('gpt_amp.torch.bf16', 'gpt_amp.torch.f32'))}")
PY
