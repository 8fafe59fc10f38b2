#!/usr/bin/env bash
# The first-divergent-op finder (scripts/find_divergence.sh) finds planted bugs: with each one the
# first divergence it names is the module where the bug is, and on the unmodified model it reports
# none. Needs Debian's python3-torch: without it the test is skipped (exit status 77).
# Usage: find_divergence_test.sh path/to/copy_task
set -uo pipefail
bin=$1
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
if ! /usr/bin/python3 -c "import torch" 2>/dev/null; then
  echo "SKIP: python3-torch is not installed (bash scripts/install_deps.sh --golden)"
  exit 77
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0

# check <what> <exit status> <want status> <log file> <expected last line, a substring>
check() {
  local what=$1 status=$2 want_status=$3 log=$4 want=$5 last
  last=$(tail -n 1 "$log")
  if [[ $status -ne $want_status || $last != *"$want"* ]]; then
    echo "FAIL: $what: exit status $status (want $want_status), last line:"
    echo "  $last"
    echo "  (want '$want'); the whole output:"
    sed 's/^/    /' "$log"
    failures=$((failures + 1))
  else
    echo "ok: $what: $last"
  fi
}

# run_planted <planted bug> <expected last line>: the same step with the bug, against PyTorch's
# capture of the first run (same weights, same batch).
run_planted() {
  local bug=$1 want=$2
  rm -f "$dir/ours.safetensors"
  SCRATCHGRAD_PLANTED_BUG=$bug "$bin" capture --checkpoint "$dir/model.safetensors" \
    --out "$dir/ours.safetensors" >"$dir/log" 2>&1 &&
    "$bin" compare "$dir/torch.safetensors" "$dir/ours.safetensors" --atol 1e-9 --rtol 1e-7 \
      >>"$dir/log" 2>&1
  check "planted bug $bug" $? 1 "$dir/log" "$want"
}

# One untrained tiny model for every run (the finder's default model, written once).
"$bin" capture --init --checkpoint "$dir/model.safetensors" --out "$dir/init.safetensors" \
  >/dev/null || { echo "FAIL: copy_task capture --init"; exit 1; }

# The learner's script, end to end, on the unmodified model.
OUT=$dir COPY_TASK=$bin timeout 120 bash "$root/scripts/find_divergence.sh" \
  "$dir/model.safetensors" >"$dir/log" 2>&1
check "find_divergence.sh, no planted bug" $? 0 "$dir/log" \
  "no divergence beyond atol 1e-09 + rtol 1e-07"
# No sqrt(d_model) scale: the embedding's output is the first to differ.
run_planted embedding-scale "first divergence beyond atol 1e-09 + rtol 1e-07·|reference|: src_embed ("
# LayerNorm eps 1e-3: the first LayerNorm to run.
run_planted layer-norm-eps "|reference|: encoder.layers.0.norm1 ("
# Causal mask off by one: the first decoder self-attention (its w_o is the first module to see the
# attention's result; w_q, w_k and w_v before it agree).
run_planted causal-mask "|reference|: decoder.layers.0.self_attn.w_o ("

if [[ $failures -gt 0 ]]; then
  echo "$failures of 4 checks failed"
  exit 1
fi
echo "all 4 checks passed"
