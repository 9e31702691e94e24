#!/usr/bin/env bash
# tools/train_classifier.sh — the main job: installs what is missing (build dependencies and the
# data sets), builds the text_classification program in Release and trains the Transformer text
# classifier on SpamAssassin (default) with its Naive Bayes baseline. Arguments go to the
# program, e.g.:
#   bash tools/train_classifier.sh                         # spam, defaults (a few minutes)
#   bash tools/train_classifier.sh --dataset fortunes      # Debian fortunes, 7 classes
#   bash tools/train_classifier.sh --predict "Win cash now" # classify with the saved run
# Output: runs/text_classification (metrics.json, loss_curve.png, attention/, checkpoints).
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh --data
# OpenBLAS 0.3.21 misdetects some AVX-512 CPUs and falls back to slow kernels unless told.
if [[ -z "${OPENBLAS_CORETYPE:-}" ]] && grep -q avx512f /proc/cpuinfo; then
  export OPENBLAS_CORETYPE=SkylakeX
fi
jobs="${TG_JOBS:-$(nproc)}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-$(nproc)}"
# Idle OpenMP threads sleep instead of spinning: on a small machine shared with anything else,
# spinning threads halve the training speed.
export OMP_WAIT_POLICY="${OMP_WAIT_POLICY:-passive}"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DTG_BUILD_BENCH=OFF >/dev/null
cmake --build build -j "$jobs" --target text_classification
exec ./build/examples/text_classification "$@"
