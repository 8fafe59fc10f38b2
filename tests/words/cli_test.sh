#!/usr/bin/env bash
# The words command line: it trains on a dictionary slice and samples; every bad input gets a
# one-line error and a non-zero exit, never a crash. Usage: cli_test.sh path/to/words dict
set -uo pipefail
bin=$1
dict=$2
source "$(dirname "${BASH_SOURCE[0]}")/../support/cli_testing.sh"

small=(--data "$dict" --eval-every 20 --warmup 5 --batch 16 --d-model 32 --ffn 64 --quiet)
expect_ok "best, at step" train "${small[@]}" --steps 40 --layers 2 --out "$dir/run" \
  --metrics-json "$dir/run.json"
grep -qF '"held_out_loss":' "$dir/run.json" || { echo "FAIL: no --metrics-json"; failures=$((failures + 1)); }
# The loss per letter fell below the uniform guess's (ln 28 = 3.33 nats) within 40 steps.
loss=$(grep -o 'held-out loss [0-9.]*' "$dir/out" | awk 'NR == 1 {print $3}')
if ! awk -v l="$loss" 'BEGIN { exit !(l < 3.0) }'; then
  echo "FAIL: held-out loss $loss after 40 steps"; failures=$((failures + 1))
fi
for f in model.safetensors last.safetensors loss.svg; do
  [[ -s $dir/run/$f ]] || { echo "FAIL: no $f"; failures=$((failures + 1)); }
done

# Sampling: seeded, so the same twice; greedy gives every row the same word.
expect_ok "" sample --checkpoint "$dir/run/model.safetensors" --count 5 --seed 3
cp "$dir/out" "$dir/first"
expect_ok "" sample --checkpoint "$dir/run/model.safetensors" --count 5 --seed 3
cmp -s "$dir/first" "$dir/out" || { echo "FAIL: a seed drew other words"; failures=$((failures + 1)); }
[[ $(wc -l <"$dir/out") -eq 5 ]] || { echo "FAIL: not 5 words"; failures=$((failures + 1)); }
expect_ok "" sample --checkpoint "$dir/run/model.safetensors" --count 3 --greedy
[[ $(sort -u "$dir/out" | wc -l) -eq 1 ]] || { echo "FAIL: greedy rows differ"; failures=$((failures + 1)); }

# A run continues only when asked, with its model; the flags that may change may.
expect_error "pass --resume to continue it or --overwrite to start over" train "${small[@]}" \
  --steps 40 --layers 2 --out "$dir/run"
expect_error "--layers is 2 in $dir/run/last.safetensors, 3 now" train "${small[@]}" --steps 40 \
  --layers 3 --resume --out "$dir/run"
expect_ok "trained 60 steps" train "${small[@]}" --steps 60 --layers 2 --resume --out "$dir/run"
# The library's run flags: a bfloat16 run stopped halfway resumes only in bfloat16.
expect_ok "trained 20 steps" train "${small[@]}" --steps 40 --layers 2 --bf16 --stop-after 20 \
  --out "$dir/bf16"
expect_error "was trained in bfloat16" train "${small[@]}" --steps 40 --layers 2 --resume \
  --out "$dir/bf16"
expect_ok "trained 40 steps" train "${small[@]}" --steps 40 --layers 2 --bf16 --resume \
  --out "$dir/bf16"

expect_error "--layers: '65' is not an integer in [1, 64]" train --layers 65 --out "$dir/x"
expect_error "--dropout: '1' is not a number in [0, 1)" train --dropout 1 --out "$dir/x"
expect_error "--dropout: '1.5' is not a number in [0, 1)" train --dropout 1.5 --out "$dir/x"
expect_error "--steps: '0' is not an integer in [1, 1000000000]" train --steps 0 --out "$dir/x"
expect_error "--metrics-json: cannot write /dev/null: it is a character device" train --data "$dict" \
  --steps 5 --warmup 1 --out "$dir/devnull" --metrics-json /dev/null
[[ ! -e $dir/devnull/last.safetensors ]] || { echo "FAIL: trained before refusing /dev/null"; failures=$((failures + 1)); }
expect_error "--warmup 200 must be below --steps 5" train --data "$dict" --steps 5 --out "$dir/x"
expect_error "--lr: '0' is not a number in (0, 1]" train --data "$dict" --lr 0 --steps 5 --warmup 1 \
  --out "$dir/x"
expect_error "--temperature excludes --greedy" sample --greedy --temperature 2
expect_error "--temperature: '0' is not a number in (0, 100]" sample --temperature 0
# An output onto the run's own checkpoint or onto the dictionary is refused before the run; a
# resume on another dictionary is refused by name.
expect_error "--metrics-json $dir/run/last.safetensors is a checkpoint" \
  train "${small[@]}" --steps 80 --layers 2 --resume --out "$dir/run" \
  --metrics-json "$dir/run/last.safetensors"
expect_error "--log-jsonl $dict is --data" train "${small[@]}" --steps 80 --layers 2 --resume \
  --out "$dir/run" --log-jsonl "$dict"
head -n 200 "$dict" >"$dir/other.dict"
expect_error "--resume: --data $dir/other.dict is not the file the run was trained on" train \
  "${small[@]/#$dict/$dir/other.dict}" --steps 80 --layers 2 --resume --out "$dir/run"
# Samples are letters only: no <unk>, no empty word, none longer than 24 letters.
expect_ok "" sample --checkpoint "$dir/run/model.safetensors" --count 500 --temperature 5 --top-k 0
not_words=$(awk 'length == 0 || length > 24 || /[<>]/ {n++} END {print n + 0}' "$dir/out")
if [[ $not_words -ne 0 ]]; then
  echo "FAIL: $not_words samples are not words of 1 to 24 letters"; failures=$((failures + 1))
fi
expect_error "$dir/missing.dict" train --data "$dir/missing.dict" --out "$dir/x"
expect_error "does not exist" sample --checkpoint "$dir/missing.safetensors"
head -c 100 /dev/urandom >"$dir/garbage.safetensors"
expect_error "garbage.safetensors" sample --checkpoint "$dir/garbage.safetensors"
expect_error "--count: '0' is not an integer in [1, 100000]" sample --count 0
expect_error "A subcommand is required"

cli_summary
