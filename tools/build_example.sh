#!/usr/bin/env bash
# tools/build_example.sh TARGET [PROGRAM ARGS...] — the part every tools/train_*.sh shares, sourced
# by them: installs what is missing (build dependencies and the data sets: tools/setup.sh
# --examples, which leaves the test suite's Catch2 and Open MPI to tools/test.sh),
# sets the CPU environment the examples train best in, then configures build/ in Release and
# builds TARGET alone (the library it links, not the tests, benchmarks or other examples).
# The GPU module (cuda/, nvcc) is built only when it can be used or is asked for: a GPU is present
# (nvidia-smi lists one), the program's arguments name a CUDA device (--device cuda...), or
# TG_CUDA=ON is set; TG_CUDA=OFF never builds it. A CPU run skips minutes of nvcc.
#   OPENBLAS_CORETYPE  OpenBLAS 0.3.21 misdetects some AVX-512 CPUs and falls back to slow
#                      kernels unless told (kept when already set)
#   OMP_NUM_THREADS    every core unless set
#   OMP_WAIT_POLICY    passive: idle OpenMP threads sleep instead of spinning (on a small machine
#                      shared with anything else, spinning halves the training speed)
#   TG_JOBS            build jobs (default: every core)
# Prints how long installing and building took (tg_timing_start/tg_seconds are read by the caller).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
tg_timing_start=$(date +%s.%N)
tg_seconds() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", b - a }'; }

tg_target=${1:?usage: source tools/build_example.sh TARGET [PROGRAM ARGS...]}
shift
tg_cuda=${TG_CUDA:-}
if [[ -z "$tg_cuda" ]]; then
  tg_cuda=OFF
  prev=""
  for arg in "$@"; do
    if [[ "$arg" == --device=cuda* ]] || { [[ "$prev" == --device ]] && [[ "$arg" == cuda* ]]; }; then
      tg_cuda=ON
    fi
    prev=$arg
  done
  if [[ "$tg_cuda" == OFF ]] && command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q '^GPU'; then
    tg_cuda=AUTO
  fi
fi
case "$tg_cuda" in
  ON|OFF|AUTO) ;;
  *) echo "build_example: TG_CUDA=$tg_cuda: must be ON, OFF or AUTO" >&2; exit 2 ;;
esac

bash tools/setup.sh --examples
tg_install_s=$(tg_seconds "$tg_timing_start")
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && grep -q avx512f /proc/cpuinfo; then
  export OPENBLAS_CORETYPE=SkylakeX
fi
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(nproc)}"
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
tg_build_start=$(date +%s.%N)
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTG_CUDA="$tg_cuda" -DTG_BUILD_BENCH=OFF \
      -DTG_BUILD_TESTS=OFF >/dev/null
cmake --build build -j "${TG_JOBS:-$(nproc)}" --target "$tg_target"
echo "tapegrad: install ${tg_install_s} s, build of ${tg_target} $(tg_seconds "$tg_build_start") s (GPU module: ${tg_cuda}); the program starts at $(tg_seconds "$tg_timing_start") s"
