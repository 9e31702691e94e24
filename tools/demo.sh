#!/usr/bin/env bash
# tools/demo.sh — installs missing dependencies, builds and runs the demo: a small MLP trained
# with tapegrad on a seeded regression task, printing its falling loss.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j "${TG_JOBS:-$(nproc)}" --target demo
./build/examples/demo "$@"
