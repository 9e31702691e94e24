#!/usr/bin/env bash
# bench/dist.sh — the data-parallel rows: all-reduce latency / bandwidth over MPI (4 KB - 64 MB,
# with and without the shape handshake), and one classifier training step at 1 process against
# 2 ranks (per-rank batch B, 1 thread each). On a 2-vCPU machine the 2 ranks share the cores a
# single process would use; read the communication columns, not a speed-up. docs/distributed.md
# explains the model behind the figures.
set -euo pipefail
cd "$(dirname "$0")/.."
# build/ (the README's Release build: it has the examples bench_dist links).
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "${TG_JOBS:-$(nproc)}" --target bench_dist >/dev/null
B=./build/bench/bench_dist
M=(mpirun --allow-run-as-root --oversubscribe --bind-to none --mca btl self,vader)
export OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
echo "== all-reduce, 2 ranks (handshake on: the default)"
"${M[@]}" -np 2 "$B" --mode allreduce
echo "== all-reduce, 2 ranks, TG_DIST_CHECK=0 (no handshake)"
TG_DIST_CHECK=0 "${M[@]}" -x TG_DIST_CHECK -np 2 "$B" --mode allreduce
for b in 16 32; do
  echo "== classifier step, batch $b per rank"
  "$B" --mode ddp --batch "$b"
  "${M[@]}" -np 2 "$B" --mode ddp --batch "$b"
  "${M[@]}" -np 2 "$B" --mode ddp --batch "$b" --bucket-mb 0.25
done
