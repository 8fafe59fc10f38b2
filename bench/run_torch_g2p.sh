#!/usr/bin/env bash
# The PyTorch 2.x side of the G2P comparison: the PyTorch 2.x environment of bench/torch2_venv.sh
# (made once, shared with the copy-task benchmark), the dictionary (scripts/get_cmudict.sh), and
# bench/torch_g2p.py with the arguments given (the defaults are g2p train's):
#   bash bench/run_torch_g2p.sh --steps 6000 --json bench/results_torch_g2p.json
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
python=$(bash bench/torch2_venv.sh)
dict=$(bash scripts/get_cmudict.sh)
exec "$python" bench/torch_g2p.py --data "$dict" "$@"
