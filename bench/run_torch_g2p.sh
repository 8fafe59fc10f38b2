#!/usr/bin/env bash
# The PyTorch 2.x side of the G2P comparison: makes a venv (bench/.venv-torch2, once) with torch
# 2.x from PyPI, gets the dictionary (scripts/get_cmudict.sh) and runs bench/torch_g2p.py with the
# arguments given (the defaults are g2p train's):
#   bash bench/run_torch_g2p.sh --steps 16000 --json bench/results_torch_g2p.json
# PyPI's Linux torch wheel bundles CUDA (several GB); TORCH_INDEX_URL picks another index, e.g.
# https://download.pytorch.org/whl/cpu for the CPU-only wheel.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
venv=bench/.venv-torch2
if [[ ! -x $venv/bin/python ]]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL"} "torch>=2,<3"
fi
dict=$(bash scripts/get_cmudict.sh)
exec "$venv/bin/python" bench/torch_g2p.py --data "$dict" "$@"
