#!/usr/bin/env bash
# tools/gpu_check.sh — the one script a GPU session runs (on the device machine, repo root):
# configures with -DCMAKE_CUDA_ARCHITECTURES=90, builds the CUDA suites, the GPU benchmark and
# the examples, runs the smoke test, the parity suite, both examples with --device cuda and the
# benchmark beside PyTorch, and leaves every log under $OUT (default /tmp/gpu_out).
#   here:   bash tools/gpu_deps.sh          (once: .debs + data into .gpu/, git-ignored)
#   device: run(command="bash tools/gpu_check.sh", carry=[".gpu"], timeout_s=590)
# Stages are time-boxed so the logs come back even when one hangs; BENCH_T limits the bench to
# one sequence length (e.g. BENCH_T=4096) on a short lease.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
log() { echo "== $*" | tee -a "$OUT/summary.txt"; }
start=$(date +%s)

# ---- dependencies: the system's, else the carried Debian packages unpacked under /opt/tgdeps ----
if [[ -d .gpu/debs ]] && ! [[ -f /usr/include/xtensor/xarray.hpp ]]; then
  for f in .gpu/debs/*.deb; do dpkg -x "$f" /opt/tgdeps; done
  P=/opt/tgdeps/usr
  ML=$P/lib/x86_64-linux-gnu
  ln -sf openblas-pthread/libopenblas.so "$ML/libopenblas.so"
  ln -sf openblas-pthread/libopenblas.so.0 "$ML/libopenblas.so.0"
  export CMAKE_PREFIX_PATH=$P:$ML/cmake
  export CPATH=$P/include:$P/include/x86_64-linux-gnu/openblas-pthread
  export LIBRARY_PATH=$ML:$ML/openblas-pthread
  export LD_LIBRARY_PATH=$ML:$ML/openblas-pthread:${LD_LIBRARY_PATH:-}
  EXTRA=(-DBLAS_LIBRARIES="$ML/openblas-pthread/libopenblas.so")
  log "dependencies: carried .debs unpacked under /opt/tgdeps"
else
  EXTRA=()
  log "dependencies: system"
fi
{ nvidia-smi; nvcc --version; g++ --version | head -1; cmake --version | head -1; } \
  > "$OUT/env.txt" 2>&1

# ---- first, the attention kernels alone (no library build needed: a quick, independent check) ----
timeout 120 nvcc -std=c++17 -arch=sm_90 -O2 -I. bench/attention_check.cu -o /tmp/attention_check \
  > "$OUT/attention_check.log" 2>&1 &&
timeout 120 /tmp/attention_check >> "$OUT/attention_check.log" 2>&1
log "attention_check rc=$?: $(tail -3 "$OUT/attention_check.log" | tr '\n' ' ')"

# ---- build ----
gen=(); command -v ninja >/dev/null && gen=(-G Ninja)
timeout 300 cmake -S . -B build-gpu "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DTG_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DTG_BUILD_TOOLS=OFF "${EXTRA[@]}" > "$OUT/build.log" 2>&1 &&
timeout 400 cmake --build build-gpu -j "$(nproc)" --target test_cuda test_cuda_parity bench_cuda \
  text_classification translation >> "$OUT/build.log" 2>&1
log "build rc=$? ($(( $(date +%s) - start )) s)"
B=build-gpu

# ---- tests ----
timeout 60 "$B/tests/test_cuda" > "$OUT/smoke.log" 2>&1; log "saxpy smoke rc=$?"
timeout 240 "$B/tests/test_cuda_parity" -r compact > "$OUT/parity.log" 2>&1
log "parity suite rc=$? ($(( $(date +%s) - start )) s): $(tail -1 "$OUT/parity.log")"

# ---- examples with --device cuda ----
cls=$(find $B/examples -name text_classification -type f | head -1)
if [[ -d .gpu/data/fortunes ]]; then
  timeout 150 "$cls" --dataset fortunes --data-dir .gpu/data/fortunes --device cuda --epochs 2 \
    --out /tmp/cls_gpu --quiet > "$OUT/classifier.log" 2>&1
  log "classifier --device cuda rc=$?: $(grep -i 'test' "$OUT/classifier.log" | tail -2 | tr '\n' ' ')"
fi
tr=$(find $B/examples -name translation -type f | head -1)
timeout 120 "$tr" --dataset numbers --device cuda --steps 300 --out /tmp/tr_gpu --quiet \
  > "$OUT/translation.log" 2>&1
log "translation --device cuda rc=$?: $(tail -2 "$OUT/translation.log" | tr '\n' ' ')"

# ---- benchmark beside PyTorch ----
timeout 200 "$B/bench/bench_cuda" ${BENCH_T:-} > "$OUT/bench_tg.txt" 2>&1; log "bench_cuda rc=$?"
timeout 200 python3 bench/bench_torch_cuda.py ${BENCH_T:-} > "$OUT/bench_torch.txt" 2>&1
log "bench_torch_cuda rc=$?"
python3 bench/gpu_report.py "$OUT/bench_tg.txt" "$OUT/bench_torch.txt" > "$OUT/bench_table.txt" 2>&1
cat "$OUT/bench_table.txt"
log "done in $(( $(date +%s) - start )) s"
cat "$OUT/summary.txt"
