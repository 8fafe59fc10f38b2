#!/usr/bin/env bash
# Checks that the golden generator reproduces the committed golden files: runs
# scripts/make_golden.py --check with Debian's python3-torch (installed here if missing), which
# regenerates every tests/golden/<family>.json in memory and wants the committed bytes exactly
# (why exactly, and how the CPU kernels are pinned for it: scripts/make_golden.py's docstring).
# Writes nothing; a difference lists the cases and values that changed and exits 1.
#   bash scripts/check_golden.sh           # every family
#   bash scripts/check_golden.sh softmax   # just one
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bash scripts/install_deps.sh --golden
/usr/bin/python3 scripts/make_golden.py --check "$@"
