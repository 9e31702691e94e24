#!/usr/bin/env bash
# bench/generate.sh — KV-cached generation against uncached: `gpt --sample --length LENGTH` with
# and without --no-kv-cache, one thread, interleaved rounds, medians and their ratio (goal:
# uncached / cached >= 10 at the GPT example's default size, d_model 128, 4 layers, 4 heads).
# Each configuration is a short seeded training run (MAX_STEPS, default 30) of its own, kept in
# $BUILD/bench_generate/<arch>_<block>: the GPT and llama (2 key/value heads) at block 32 (the
# example's default: the GPT's learned positions end there, so past 32 characters its cache
# refills every step; llama's rolls) and at block 288 (the whole 256 characters and the prompt
# fit: both caches hold every position).
#   bash bench/generate.sh                  ROUNDS=5 LENGTH=256
#   ROUNDS=3 CONFIGS="gpt:288 llama:32" bash bench/generate.sh
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
rounds=${ROUNDS:-5}
length=${LENGTH:-256}
steps=${MAX_STEPS:-30}
configs=${CONFIGS:-gpt:32 gpt:288 llama:32 llama:288}
bash tools/setup.sh --data >/dev/null
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "${TG_JOBS:-$(nproc)}" --target gpt >/dev/null
gpt="$build/examples/gpt"
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

# seconds for one --sample run of run folder $1 generating $2 characters; rest: extra options
one() {
  local dir=$1 n=$2
  shift 2
  local t0 t1
  t0=$(date +%s.%N)
  "$gpt" --out "$dir" --sample "A bug in the code" --length "$n" --seed 7 --threads 1 "$@" \
    >/dev/null
  t1=$(date +%s.%N)
  echo "$t0 $t1" | awk '{printf "%.4f\n", $2 - $1}'
}
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

rows=()
for cfg in $configs; do
  arch=${cfg%%:*} block=${cfg##*:}
  run="$build/bench_generate/${arch}_$block"
  if [[ ! -f "$run/best/model.safetensors" ]]; then
    echo "training $arch, block $block ($steps steps) into $run" >&2
    rm -rf "$run"
    mkdir -p "$(dirname "$run")"
    kv=()
    [[ $arch == llama ]] && kv=(--kv-heads 2)
    "$gpt" --out "$run" --arch "$arch" "${kv[@]}" --block "$block" --steps "$steps" \
      --eval-every "$steps" --warmup 5 --batch-size 16 --eval-windows 4 --samples 0 --quiet \
      --threads 1 >/dev/null
  fi
  tc=() tu=() t0=()
  for ((r = 0; r <= rounds; r++)); do  # round 0 warms the page cache and is dropped
    a=$(one "$run" "$length")
    b=$(one "$run" "$length" --no-kv-cache)
    z=$(one "$run" 0)  # start-up, loading and the prompt: what both share
    if ((r > 0)); then tc+=("$a") tu+=("$b") t0+=("$z"); fi
    echo "$arch block $block round $r/$rounds: cached $a s, uncached $b s, start-up $z s" >&2
  done
  c=$(printf '%s\n' "${tc[@]}" | median)
  u=$(printf '%s\n' "${tu[@]}" | median)
  z=$(printf '%s\n' "${t0[@]}" | median)
  rows+=("$(printf '| %s | %s | %s | %s | %s | %.1f | %.1f |' "$arch" "$block" "$c" "$u" "$z" \
    "$(echo "$u $c" | awk '{print $1 / $2}')" "$(echo "$u $c $z" | awk '{print ($1 - $3) / ($2 - $3)}')")")
done

echo
echo "$gpt --sample, $length characters after a 17-character prompt, 1 thread, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'); medians of $rounds rounds (s, whole process)"
printf '| arch | block | cached | uncached | start-up (--length 0) | uncached / cached | the same without start-up |\n'
printf '|---|---|---|---|---|---|---|\n'
printf '%s\n' "${rows[@]}"
