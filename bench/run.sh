#!/usr/bin/env bash
# bench/run.sh — builds bench_tapegrad (Release) and runs it interleaved with its PyTorch twin,
# one warm-up round then ROUNDS rounds (A B A B …), both pinned to one thread; prints one table.
#   bash bench/run.sh                 full run (about 1–2 minutes after the build)
#   ROUNDS=3 BUDGET=0.3 bash bench/run.sh   quicker, noisier
#   FILTER=tiny bash bench/run.sh     only the groups whose name contains "tiny"
#   FILTER=mha / FILTER=local         only the MHA rows / only the local-attention table
#   FILTER=train                      only the two training-step rows (~1–2 min)
#   FILTER=unary / FILTER=rowwise     only gelu, tanh, exp, sigmoid, silu / softmax, layer_norm,
#                                     rms_norm, sum, rope
#   FILTER=gpt                        the GPT-style and the nanoGPT-shaped training steps
#   FILTER=nanogpt                    only the nanoGPT-shaped step (bench/nanogpt.cpp)
#   FILTER=gqa                        grouped-query SDPA against the call with k and v repeated
#                                     (tapegrad only)
#   FILTER=higher                     a Hessian-vector product and activation checkpointing against
#                                     the first-order step (tapegrad only, bench/higher.cpp)
#   FILTER=variants                   each kernel family's AVX-512 variant against the build's own
#                                     (ops/core/cpu/isa.cpp's per-CPU preference list; tapegrad only)
#   T2_ROUNDS=0                       skip the 2-thread rounds (mha, train, gpt, nanogpt; default:
#                                     ROUNDS)
# Groups: matmul, tiny, mha, train, unary, rowwise, gpt, nanogpt (in-process, interleaved rounds),
# the 2-thread rounds of mha, train, gpt and nanogpt (both sides at 2 threads), and local
# (one fresh process per configuration, LROUNDS rounds, each round all T interleaved: tg local, tg
# dense, torch blockwise (unfold, and a Python loop), torch dense). FILTER matches group names.
# Raw lines are kept in $BUILD/bench_raw.txt.
# Environment: BUILD (default build-bench), JOBS, ROUNDS, BUDGET, FILTER, LROUNDS (default 3),
# LOCAL_T (default "1024 2048 4096 8192 16384"), LBUDGET (seconds per local process, default 1).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh --torch  # build dependencies and Debian's python3-torch for the twin
build=${BUILD:-build-bench}
rounds=${ROUNDS:-5}
budget=${BUDGET:-0.8}
filter=${FILTER:-}
lrounds=${LROUNDS:-3}
local_t=${LOCAL_T:-1024 2048 4096 8192 16384}
lbudget=${LBUDGET:-1}
want() { [[ -z $filter || $1 == *"$filter"* ]]; }  # does FILTER select group $1?
python=${PYTHON:-/usr/bin/python3}

# One thread for both pools on both sides (torch.set_num_threads does not reach OpenBLAS).
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DTG_BUILD_BENCH=ON -DTG_BUILD_TESTS=OFF \
      -DTG_BUILD_EXAMPLES=OFF -DTG_CUDA=OFF >/dev/null
cmake --build "$build" -j "${JOBS:-1}" --target bench_tapegrad >/dev/null

# OpenBLAS 0.3.21 does not recognise every CPU: on an AVX-512 CPU it does not know (e.g. cpu
# model 207 here) it falls back to its SSE3 "Prescott" kernels, about 4x slower. Unless the caller
# chose a core, pick the best one the CPU supports, for both sides alike.
core=$("$build/bench/bench_tapegrad" --blas-core)
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && [[ $core == Prescott || $core == Nehalem || $core == Core2 || $core == Sandybridge ]]; then
  if grep -qw avx512f /proc/cpuinfo; then
    export OPENBLAS_CORETYPE=SkylakeX
  elif grep -qw avx2 /proc/cpuinfo; then
    export OPENBLAS_CORETYPE=Haswell
  fi
  [[ -n "${OPENBLAS_CORETYPE:-}" ]] &&
    echo "OpenBLAS picked $core on this CPU; using OPENBLAS_CORETYPE=$OPENBLAS_CORETYPE (set it to override)" >&2
fi
core=$("$build/bench/bench_tapegrad" --blas-core)

have_torch=1
"$python" -c "import torch" 2>/dev/null || { have_torch=0; echo "no PyTorch at $python: torch rows read n/a" >&2; }

raw="$build/bench_raw.txt"
: >"$raw"
in_process=0
for g in matmul tiny mha train unary rowwise gpt nanogpt variants gqa higher; do want $g && in_process=1; done
for ((r = 0; in_process && r <= rounds; r++)); do
  echo "round $r/$rounds$([[ $r == 0 ]] && echo ' (warm-up, dropped)')" >&2
  "$build/bench/bench_tapegrad" --budget "$budget" ${filter:+--filter "$filter"} | sed "s/^/$r /" >>"$raw"
  if [[ $have_torch == 1 ]]; then
    "$python" bench/bench_torch.py --budget "$budget" ${filter:+--filter "$filter"} | sed "s/^/$r /" >>"$raw"
  fi
done

# bf16 / f16 GEMMs (bench/half_gemm.cpp and its PyTorch twin): their own programs, interleaved
# round by round; rows only where the CPU has bf16 instructions (bench_half_gemm says).
if want half_gemm; then
  cmake --build "$build" -j "${JOBS:-1}" --target bench_half_gemm >/dev/null
  for ((r = 0; r <= rounds; r++)); do
    "$build/bench/bench_half_gemm" --budget "$budget" | sed "s/^/$r /" >>"$raw"
    [[ $have_torch == 1 ]] && "$python" bench/half_gemm_torch.py --budget "$budget" | sed "s/^/$r /" >>"$raw"
  done
fi

# The fused attention fwd+bwd on bf16 (dot / float32 products) against float32
# (bench/attention_bf16.cpp); rows only where the CPU has bf16 instructions.
if want attention_bf16; then
  cmake --build "$build" -j "${JOBS:-1}" --target bench_attention_bf16 >/dev/null
  for ((r = 0; r <= rounds; r++)); do
    "$build/bench/bench_attention_bf16" --budget "$budget" | sed "s/^/$r /" >>"$raw"
  done
fi

# The GPT-style step in float32 and under bf16 autocast beside PyTorch's, one process per
# configuration (peak RSS); bench/gpt_autocast.sh prints its own table ("autocast": FILTER=gpt
# selects the in-process GPT rows only).
if want autocast; then
  BUILD="$build" JOBS="${JOBS:-1}" ROUNDS="$rounds" bash bench/gpt_autocast.sh
fi

# The training steps and MHA again at 2 threads on both sides (metrics prefixed "t2."), interleaved
# round by round like the 1-thread rounds; "gpt" selects the GPT and the nanoGPT steps. Both sides
# run with OMP_WAIT_POLICY=passive (unless the caller set a policy), as tapegrad's programs do
# (autograd/openmp_wait.hpp): libgomp's spinning idle workers take the cores OpenBLAS's threads
# and the next region need, on either side (bench/README.md has the figures). Skipped on a 1-CPU
# machine or with T2_ROUNDS=0.
t2_policy=${OMP_WAIT_POLICY:-passive}
t2_rounds=${T2_ROUNDS:-$rounds}
(( $(nproc --all) < 2 )) && t2_rounds=0  # plain nproc reads OMP_NUM_THREADS (1 here)
t2_groups=()
for g in mha train gpt nanogpt; do
  want $g || continue
  [[ $g == nanogpt ]] && want gpt && continue  # the filter "gpt" already runs nanogpt
  t2_groups+=("$g")
done
for ((r = 0; t2_rounds > 0 && ${#t2_groups[@]} > 0 && r <= t2_rounds; r++)); do
  echo "2-thread round $r/$t2_rounds$([[ $r == 0 ]] && echo ' (warm-up, dropped)')" >&2
  for g in "${t2_groups[@]}"; do
    OMP_WAIT_POLICY=$t2_policy OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 \
      "$build/bench/bench_tapegrad" --budget "$budget" \
      --filter "$g" | sed "s/^metric /metric t2./; s/^/$r /" >>"$raw"
    if [[ $have_torch == 1 ]]; then
      OMP_WAIT_POLICY=$t2_policy OMP_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 \
        "$python" bench/bench_torch.py --threads 2 \
        --budget "$budget" --filter "$g" | sed "s/^metric /metric t2./; s/^/$r /" >>"$raw"
    fi
  done
done

# Local attention: one fresh process per (side, path, T) so that ru_maxrss is that
# configuration's peak. The dense paths need T² memory: tapegrad's up to 8192, PyTorch's up to
# 4096 (11 s per call at 8192). No warm-up round: each process makes its own warm-up call.
if want local; then
  for ((r = 1; r <= lrounds; r++)); do
    echo "local round $r/$lrounds" >&2
    for T in $local_t; do
      "$build/bench/bench_tapegrad" --budget "$lbudget" --one local "$T" | sed "s/^/$r /" >>"$raw"
      if ((T <= 8192)); then
        "$build/bench/bench_tapegrad" --budget "$lbudget" --one dense "$T" | sed "s/^/$r /" >>"$raw"
      fi
      if [[ $have_torch == 1 ]]; then
        "$python" bench/bench_torch.py --budget "$lbudget" --one blk "$T" | sed "s/^/$r /" >>"$raw"
        if ((T <= 8192)); then  # the Python-loop version's backward is O(T²/64)
          "$python" bench/bench_torch.py --budget "$lbudget" --one loop "$T" | sed "s/^/$r /" >>"$raw"
        fi
        if ((T <= 4096)); then
          "$python" bench/bench_torch.py --budget "$lbudget" --one dense "$T" | sed "s/^/$r /" >>"$raw"
        fi
      fi
    done
  done
fi
simd=$("$build/bench/bench_tapegrad" --choice)
T2_POLICY=$t2_policy python3 bench/report.py "$raw" "OpenBLAS core $core, our kernels $simd"  # needs no torch
