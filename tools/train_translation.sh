#!/usr/bin/env bash
# tools/train_translation.sh — installs missing dependencies and the example datasets, builds
# the `translation` example in Release and trains it with its defaults (English number words ->
# French: 166 s on 2 cores once built, early-stopped at step 500), passing every argument on, e.g.
#   bash tools/train_translation.sh --metrics-out runs/translation/metrics.json
#   bash tools/train_translation.sh --dataset freedict-eng-fra --out runs/freedict
#   bash tools/train_translation.sh --translate "seventy-one thousand, four hundred and two"
# Training again into a folder that holds a run needs --resume (continue) or --overwrite.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/build_example.sh translation "$@"
exec ./build/examples/translation "$@"
