#!/usr/bin/env bash
# Prints the Python of a virtual environment with PyTorch 2.x from PyPI (and numpy), making it once
# and reusing it after: ${SCRATCHGRAD_CACHE:-~/.cache/scratchgrad}/venv-torch2, shared by every
# clone. It is what a user who picks PyTorch installs (MKL, oneDNN, AVX-512 kernels), unlike
# Debian's python3-torch 1.13. PyPI's Linux wheel depends on the CUDA libraries: about 5 GB, a few
# minutes once. TORCH_SPEC picks another version ("torch==2.15.0"); TORCH_INDEX_URL another index
# (https://download.pytorch.org/whl/cpu holds CPU-only wheels, where it can be reached).
#   python=$(bash bench/torch2_venv.sh)
set -euo pipefail
cache=${SCRATCHGRAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/scratchgrad}
venv=$cache/venv-torch2
spec=${TORCH_SPEC:-torch>=2,<3}
# The marker is written last: an install that was interrupted is redone, not half used.
if [[ ! -f $venv/.installed ]] || ! "$venv/bin/python" -c "import torch, numpy" 2>/dev/null; then
  echo "torch2_venv: installing $spec and numpy from PyPI into $venv (once; about 5 GB)" >&2
  mkdir -p "$cache"
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} "$spec" numpy >&2
  touch "$venv/.installed"
fi
echo "$venv/bin/python"
