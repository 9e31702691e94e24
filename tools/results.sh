#!/usr/bin/env bash
# tools/results.sh — measures the README's results table: trains each row's program once per seed
# into runs/results/<row>/seed<k>/ and then writes the table into README.md from those runs'
# metrics.json (tools/results.py), so no figure there is typed by hand. A run whose metrics.json
# exists is kept, and one that was killed resumes (--resume), so the script can be run again.
#   bash tools/results.sh                         the default rows, SEEDS="0 1 2"
#   ROWS="spam translation" bash tools/results.sh  some rows (spam spam_np2 fortunes translation gpt
#                                                 gpt_llama, and <row>_bf16 for each but
#                                                 spam_np2: the same run with --precision bf16)
#   SEEDS=0 ROWS=gpt bash tools/results.sh
# It runs as the tools/train_*.sh scripts do (tools/build_example.sh: packages, data, build/,
# the CPU environment); README="" leaves README.md alone and only prints the table.
set -euo pipefail
cd "$(dirname "$0")/.."
rows=${ROWS:-spam spam_bf16 spam_np2 fortunes fortunes_bf16 translation translation_bf16 gpt gpt_bf16}
seeds=${SEEDS:-0 1 2}
readme=${README-README.md}
bash tools/setup.sh --data  # Open MPI too (build_example.sh installs the examples' needs only)
source tools/build_example.sh text_classification
cmake --build build -j "${TG_JOBS:-$(nproc)}" --target translation gpt
mpi=(mpirun --oversubscribe --bind-to none)
[[ $(id -u) -eq 0 ]] && mpi+=(--allow-run-as-root)

for row in $rows; do
  for k in $seeds; do
    out=runs/results/$row/seed$k
    if [[ -f $out/metrics.json ]]; then
      echo "results: $out has finished, kept"
      continue
    fi
    resume=()  # the options after the row's own: --resume, --precision
    [[ -d $out/last ]] && resume=(--resume)
    case $row in  # <row>_bf16: <row>'s run in bf16 autocast
      spam_np2_bf16) echo "results: no bf16 row for spam_np2" >&2; exit 2 ;;
      *_bf16) resume+=(--precision bf16) ;;
    esac
    echo "results: $row, seed $k -> $out ${resume[*]}"
    case ${row%_bf16} in
      spam) ./build/examples/text_classification --seed "$k" --out "$out" --quiet "${resume[@]}" ;;
      spam_np2)
        "${mpi[@]}" -np 2 ./build/examples/text_classification --seed "$k" --batch-size 16 \
          --threads 1 --out "$out" --quiet "${resume[@]}" ;;
      fortunes)
        ./build/examples/text_classification --dataset fortunes --seed "$k" --out "$out" --quiet \
          "${resume[@]}" ;;
      translation) ./build/examples/translation --seed "$k" --out "$out" --quiet "${resume[@]}" ;;
      gpt) ./build/examples/gpt --seed "$k" --out "$out" --quiet "${resume[@]}" ;;
      gpt_llama)
        ./build/examples/gpt --arch llama --kv-heads 2 --seed "$k" --out "$out" --quiet \
          "${resume[@]}" ;;
      *) echo "results: unknown row $row (spam spam_np2 fortunes translation gpt gpt_llama;" \
           "<row>_bf16)" >&2
         exit 2 ;;
    esac
  done
done
if [[ -n $readme ]]; then
  /usr/bin/python3 tools/results.py --write "$readme"
else
  /usr/bin/python3 tools/results.py
fi
