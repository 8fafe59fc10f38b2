#!/usr/bin/env bash
# The main job: build scratchgrad, train the copy-task Transformer (tiny preset, about 20 s of
# training on 2 cores), then decode a few sequences with the saved model.
#   bash scripts/copy_task.sh                      # defaults: runs/copy, tiny, 1000 steps
#   bash scripts/copy_task.sh --task reverse --steps 1500 --out runs/reverse
# Arguments go to `copy_task train` (see `build/examples/copy_task/copy_task train --help`).
# The default directory, runs/copy, is the demo's: a second run replaces it. An existing run in a
# directory given with --out is refused: add --resume to continue it, or --overwrite.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh

bash scripts/install_deps.sh

build_example copy_task
bin=$build_dir/examples/copy_task/copy_task

# Where the model goes: the --out given by the user, else runs/copy.
out=runs/copy
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  [[ ${args[i]} == --out ]] && out=${args[i + 1]:-$out}
  [[ ${args[i]} == --out=* ]] && out=${args[i]#--out=}
done
if [[ " $* " != *" --out"* ]]; then
  args+=(--out "$out")
  if [[ " $* " != *" --resume "* && " $* " != *" --overwrite "* ]] && compgen -G "$out/*.safetensors" >/dev/null; then
    echo "copy_task.sh: replacing the demo run in $out (give --out DIR to keep runs apart)"
    args+=(--overwrite)
  fi
fi

echo
"$bin" train "${args[@]}" --metrics-json "$out/metrics.json"
echo
echo "==== decoding with $out/model.safetensors ===="
"$bin" decode --checkpoint "$out/model.safetensors" "1 2 3 4 5 6 7 8 9 10" "1 9 9 3 3 7 1 5 2 8" "1 4 4 4 4 6 6 6 6 2"
