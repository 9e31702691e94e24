#!/usr/bin/env bash
# tools/test.sh — installs missing dependencies, builds tapegrad and runs the whole test suite.
#   bash tools/test.sh              Release build in build/
#   bash tools/test.sh --sanitize   ASan + UBSan build in build-san/ (-fno-sanitize-recover=all),
#                                   with cuda/ on the host CUDA emulator (tools/cuda_emu): every
#                                   CUDA path and the GPU parity suite run on the CPU there
# ctest prints "100% tests passed, 0 tests failed out of N"; an empty run is an error.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh

jobs=${TG_JOBS:-$(nproc)}
if [[ "${1:-}" == "--sanitize" ]]; then
  dir=build-san
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Debug -DTG_SANITIZE=ON -DTG_BUILD_BENCH=OFF \
        -DTG_BUILD_EXAMPLES=ON -DTG_CUDA=OFF -DTG_CUDA_EMU=ON >/dev/null
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
else
  dir=build
  # Explicit: tools/build_example.sh may have configured build/ without the GPU module, the
  # benchmarks or the tests.
  cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=Release -DTG_CUDA=AUTO -DTG_BUILD_BENCH=ON \
        -DTG_BUILD_TESTS=ON >/dev/null
fi
cmake --build "$dir" -j "$jobs"
# One thread per test process: ctest runs several processes at once.
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
ctest --test-dir "$dir" --output-on-failure --no-tests=error -j "$jobs"
