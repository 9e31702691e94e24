#!/usr/bin/env bash
# tools/train_classifier.sh — the main job: installs what is missing (build dependencies and the
# data sets), builds the text_classification program in Release and trains the Transformer text
# classifier on SpamAssassin (default) with its Naive Bayes baseline. Arguments go to the
# program, e.g.:
#   bash tools/train_classifier.sh                         # spam, defaults (a few minutes)
#   bash tools/train_classifier.sh --dataset fortunes      # Debian fortunes, 7 classes
#   bash tools/train_classifier.sh --predict "Win cash now" # classify with the saved run
# Output: runs/text_classification (metrics.json, loss_curve.png, attention/, checkpoints).
# Training again into a folder that holds a run needs --resume (continue) or --overwrite.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/build_example.sh text_classification "$@"
exec ./build/examples/text_classification "$@"
