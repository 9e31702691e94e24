#!/usr/bin/env bash
# bench/sampling.sh — tiny work at the default thread count against one thread: `gpt --sample`
# generating LENGTH characters (one forward of a (1, <= 32) context per character), on an idle
# machine and on one loaded with a busy loop per core; `--threads 1` against no --threads
# (OMP_NUM_THREADS or every core: what users run), interleaved rounds, medians and their ratio.
# The goal: default / 1 thread <= 1 on both (tiny GEMMs stay on one OpenBLAS thread, tiny
# attention heads serial, OpenMP waits passive: ops/matmul/cpu/blas.cpp, autograd/openmp_wait.hpp).
#   bash bench/sampling.sh                  ROUNDS=5 LENGTH=300
#   ROUNDS=3 LENGTH=100 bash bench/sampling.sh
#   GPT=/other/build/examples/gpt bash bench/sampling.sh    another build's program (before/after)
# The model is a short seeded training run (MAX_STEPS, default 60) kept in $BUILD/bench_sampling.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD:-build}
rounds=${ROUNDS:-5}
length=${LENGTH:-300}
steps=${MAX_STEPS:-60}
bash tools/setup.sh --data >/dev/null
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "${TG_JOBS:-$(nproc)}" --target gpt >/dev/null
gpt="$build/examples/gpt"
sampler=${GPT:-$gpt}
run="$build/bench_sampling/run"
if [[ ! -f "$run/best/model.safetensors" ]]; then
  echo "training a small model for the bench ($steps steps) into $run" >&2
  rm -rf "$build/bench_sampling"
  mkdir -p "$build/bench_sampling"
  "$gpt" --out "$run" --steps "$steps" --eval-every "$steps" --warmup 10 --samples 0 --quiet \
    --threads 1 >/dev/null
fi
unset OMP_NUM_THREADS OMP_WAIT_POLICY GOMP_SPINCOUNT OPENBLAS_NUM_THREADS

# seconds for one --sample run; $1: extra environment (or ""), rest: extra options
one() {
  local envs=$1
  shift
  local t0 t1
  t0=$(date +%s.%N)
  env $envs "$sampler" --out "$run" --sample "A bug" --length "$length" --seed 7 "$@" >/dev/null
  t1=$(date +%s.%N)
  echo "$t0 $t1" | awk '{printf "%.3f\n", $2 - $1}'
}
median() { sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'; }

declare -A res
for state in idle loaded; do
  pids=()
  if [[ $state == loaded ]]; then
    for ((c = 0; c < $(nproc); c++)); do
      (while :; do :; done) &
      pids+=($!)
    done
  fi
  t1=() td=()
  for ((r = 0; r <= rounds; r++)); do  # round 0 warms the page cache and is dropped
    a=$(one "" --threads 1)
    b=$(one "")
    if ((r > 0)); then t1+=("$a") td+=("$b"); fi
    echo "$state round $r/$rounds: 1 thread $a s, default $b s" >&2
  done
  ((${#pids[@]})) && kill "${pids[@]}" 2>/dev/null && wait "${pids[@]}" 2>/dev/null || true
  res[$state,1]=$(printf '%s\n' "${t1[@]}" | median)
  res[$state,d]=$(printf '%s\n' "${td[@]}" | median)
done

echo
echo "$sampler --sample, $length characters, $(nproc) cores; medians of $rounds rounds (s)"
printf '| machine | 1 thread | default threads | default / 1 thread |\n'
printf '|---|---|---|---|\n'
for state in idle loaded; do
  printf '| %s | %s | %s | %.2f |\n' "$state" "${res[$state,1]}" "${res[$state,d]}" \
    "$(echo "${res[$state,d]} ${res[$state,1]}" | awk '{print $1 / $2}')"
done
