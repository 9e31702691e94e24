#!/usr/bin/env bash
# tools/setup.sh — installs whatever tapegrad needs that is missing, with apt-get (Debian 12).
# Safe to run twice: it installs nothing when every package is present.
#   bash tools/setup.sh            build + test dependencies
#   bash tools/setup.sh --torch    also Debian's python3-torch (fixtures and benchmarks)
set -euo pipefail

pkgs=(cmake g++ make pkg-config ccache xtensor-dev libxsimd-dev libxtensor-blas-dev
      libopenblas-dev catch2 libfmt-dev nlohmann-json3-dev)
if [[ "${1:-}" == "--torch" ]]; then pkgs+=(python3-torch python3-numpy); fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
echo "tapegrad setup: installing ${missing[*]}"
SUDO=""
if [[ $(id -u) -ne 0 ]]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to run apt-get install ${missing[*]}" >&2; exit 1; }
  SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "tapegrad setup: done"
