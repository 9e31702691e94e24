#!/usr/bin/env bash
# tools/build_example.sh TARGET — the part every tools/train_*.sh shares, sourced by them: installs
# what is missing (build dependencies and the data sets: tools/setup.sh --data), sets the CPU
# environment the examples train best in, then configures build/ in Release and builds TARGET.
#   OPENBLAS_CORETYPE  OpenBLAS 0.3.21 misdetects some AVX-512 CPUs and falls back to slow
#                      kernels unless told (kept when already set)
#   OMP_NUM_THREADS    every core unless set
#   OMP_WAIT_POLICY    passive: idle OpenMP threads sleep instead of spinning (on a small machine
#                      shared with anything else, spinning halves the training speed)
#   TG_JOBS            build jobs (default: every core)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
bash tools/setup.sh --data
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && grep -q avx512f /proc/cpuinfo; then
  export OPENBLAS_CORETYPE=SkylakeX
fi
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(nproc)}"
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTG_BUILD_BENCH=OFF >/dev/null
cmake --build build -j "${TG_JOBS:-$(nproc)}" --target "$1"
