#!/usr/bin/env bash
# The first-divergent-op finder, end to end: one training step of a copy_task model, run by
# scratchgrad and by PyTorch from the same weights and the same batch, every module's output and
# gradient compared in execution order, and the first module that differs named.
#   bash scripts/find_divergence.sh                               # an untrained tiny model
#   bash scripts/find_divergence.sh runs/copy/model.safetensors   # a trained one
# Steps (each one a command you can run yourself):
#   1. copy_task capture: writes the batch and scratchgrad's capture (and with no checkpoint given,
#      an untrained tiny model: copy_task capture --init);
#   2. scripts/capture_torch_step.py: the same step in PyTorch (Debian's python3-torch), same names;
#   3. copy_task compare torch.safetensors ours.safetensors: the table and the first divergence.
# Both sides run in float64, so they agree to ~1e-12 and the tolerances can be tight.
# Environment: OUT (the directory for the four files, default runs/divergence), ATOL (1e-9), RTOL
# (1e-7), COPY_TASK (a built copy_task: then nothing is installed or built).
# Exit status: 0 no divergence, 1 a divergence, 77 python3-torch missing, anything else an error.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

bin=${COPY_TASK:-}
if [[ -z $bin ]]; then
  source scripts/env.sh
  bash scripts/install_deps.sh --golden  # python3-torch
  build_example copy_task
  bin=$build_dir/examples/copy_task/copy_task
fi
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "find_divergence: python3-torch is missing (bash scripts/install_deps.sh --golden)" >&2
  exit 77
fi

out=${OUT:-runs/divergence}
mkdir -p "$out"
checkpoint=${1:-}
init=()
if [[ -z $checkpoint ]]; then
  checkpoint=$out/model.safetensors
  init=(--init)
fi

echo "== scratchgrad: copy_task capture"
"$bin" capture "${init[@]}" --checkpoint "$checkpoint" --batch-out "$out/batch.safetensors" \
  --out "$out/ours.safetensors"
echo "== PyTorch: scripts/capture_torch_step.py"
/usr/bin/python3 scripts/capture_torch_step.py "$checkpoint" "$out/batch.safetensors" \
  "$out/torch.safetensors"
echo "== copy_task compare $out/torch.safetensors $out/ours.safetensors"
"$bin" compare "$out/torch.safetensors" "$out/ours.safetensors" --atol "${ATOL:-1e-9}" \
  --rtol "${RTOL:-1e-7}"
