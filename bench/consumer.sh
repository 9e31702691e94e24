#!/usr/bin/env bash
# bench/consumer.sh — what a program linked against the installed tapegrad pays at start-up: the
# install test's consumer (tests/install/consumer: a 4x4 forward, backward and gradcheck) built
# against a scratch install of build/, run RUNS times; per mode the median wall time (exec to
# exit) and the largest max RSS. Modes: CPU-only (never touches CUDA: in an nvcc build it maps
# no CUDA library), --cuda (asks for devices, which dlopens libtapegrad_cuda.so and with it
# libcudart/cuBLAS/NCCL: what every program paid before the module), and PyTorch CPU doing the
# same work (`import torch`, for scale). Targets (issue 15): CPU-only <= 20 MiB, <= 20 ms.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-20}
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "${TG_JOBS:-$(nproc)}" >/dev/null
(cd build && ctest -R '^install:' >/dev/null) || { echo "the install test failed: ctest -R install --output-on-failure in build/"; exit 1; }
C=build/consumer-test/build/consumer
module=$(ls build/consumer-test/prefix/lib*/libtapegrad_cuda.so 2>/dev/null | head -1 || true)
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1

# measure LABEL CMD...: RUNS runs, each spawned and reaped by Python (os.posix_spawn + wait4, so
# the figures are the child's own: wall from spawn to exit, its max RSS); prints the median wall
# and the largest max RSS.
measure() {
  local label=$1; shift
  /usr/bin/python3 - "$label" "$RUNS" "$@" <<'PY'
import os, statistics, sys, time
label, runs, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
walls, rss = [], 0
for _ in range(runs):
    t0 = time.perf_counter()
    pid = os.posix_spawnp(cmd[0], cmd, os.environ, file_actions=[
        (os.POSIX_SPAWN_OPEN, 1, "/dev/null", os.O_WRONLY, 0)])
    _, status, ru = os.wait4(pid, 0)
    walls.append((time.perf_counter() - t0) * 1000)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{label}: {cmd} failed with {status}")
    rss = max(rss, ru.ru_maxrss)
print(f"{label:44s} {statistics.median(walls):8.1f} ms {rss / 1024:8.1f} MiB")
PY
}

echo "consumer: $C ($RUNS runs each)"
echo "CUDA module: ${module:-none (this build has no nvcc CUDA)}"
ldd "$C" | grep -E 'cuda|cublas|nccl' | sed 's/^/  links: /' || echo "  links no CUDA library"
measure "consumer, CPU only" "$C"
if [[ -n "$module" ]]; then
  measure "consumer --cuda (module + cudart/cuBLAS)" env TG_CUDA_LIBRARY="$module" "$C" --cuda
fi
if /usr/bin/python3 -c 'import torch' 2>/dev/null; then
  measure "PyTorch CPU, same work (import torch)" /usr/bin/python3 -c '
import torch
torch.manual_seed(0)
w = torch.randn(3, 2, dtype=torch.float64, requires_grad=True)
x = torch.randn(4, 2, dtype=torch.float64)
torch.tanh(x @ w.t()).sum().backward()
torch.autograd.gradcheck(lambda w: torch.tanh(x @ w.t()).sum(), (w,))'
fi
