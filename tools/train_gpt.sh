#!/usr/bin/env bash
# tools/train_gpt.sh — installs what is missing (build dependencies and Debian's fortunes),
# builds the gpt program in Release and trains the character-level GPT on the fortunes (whole
# files held out) beside its Kneser-Ney n-gram baseline. Arguments go to the program, e.g.:
#   bash tools/train_gpt.sh                                    # the default run (under 10 minutes
#                                                              # on 2 cores, build included)
#   bash tools/train_gpt.sh --steps 6000 --d-model 192         # longer, bigger
#   bash tools/train_gpt.sh --sample "A bug" --temperature 0.8 --top-k 10 --length 300 --seed 7
# Output: runs/gpt (metrics.json, loss_curve.png, samples.txt, best/ and last/ checkpoints).
# Training again into a folder that holds a run needs --resume (continue) or --overwrite.
set -euo pipefail
cd "$(dirname "$0")/.."
source tools/build_example.sh gpt "$@"
exec ./build/examples/gpt "$@"
