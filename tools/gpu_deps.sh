#!/usr/bin/env bash
# tools/gpu_deps.sh — run HERE (a Debian machine with apt), before a GPU session: downloads the
# build dependencies as .deb files and the fortunes data into .gpu/ (git-ignored), for
# tools/gpu_check.sh to unpack on the GPU machine, which can reach no package registry. Pass
# `carry: [".gpu"]` to the device run. About 15 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p .gpu/debs .gpu/data
apt-get update -qq
(cd .gpu/debs && apt-get download -qq xtensor-dev libxtensor-dev xtl-dev libxsimd-dev libxtensor-blas-dev \
   libopenblas-pthread-dev libopenblas0-pthread libopenblas-dev libopenblas0 libgfortran5 \
   catch2 libfmt-dev libfmt9 nlohmann-json3-dev libpng-dev libpng16-16 zlib1g-dev)
if [[ -d /usr/share/games/fortunes ]]; then
  rm -rf .gpu/data/fortunes && cp -r /usr/share/games/fortunes .gpu/data/fortunes
else
  echo "gpu_deps: no fortunes here (bash tools/setup.sh --data installs them); the GPU run" \
       "skips the classifier example" >&2
fi
du -sh .gpu
