#!/usr/bin/env bash
# words train --distributed under mpirun -np 2: the library's training loop over two ranks.
#   1. two ranks train, rank 0 alone prints and writes, the metrics say 2 ranks;
#   2. a run stopped at step 20 and resumed ends with the loss of an uninterrupted one, to the last
#      digit (each rank's dropout stream is saved and restored);
#   3. ranks started with a different --d-model or another dictionary are refused at once, naming
#      the flag and each rank's value; a --batch that does not split over the ranks is refused by
#      name, and so are processes mpirun started without --distributed.
# Usage: cli_test.sh <words binary> <mpirun> <dictionary>
set -euo pipefail
words=$1
mpirun=$2
dict=$3
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
small=(train --distributed --data "$dict" --steps 40 --eval-every 20 --warmup 5 --batch 16
       --d-model 32 --ffn 64 --layers 2 --quiet)

# 1. Two ranks.
"$mpirun" -np 2 --oversubscribe "$words" "${small[@]}" --out "$dir/straight" \
  --metrics-json "$dir/straight.json" >"$dir/out" 2>"$dir/err" ||
  { cat "$dir/out" "$dir/err"; fail "2-rank training failed"; }
[[ $(grep -c "on 2 rank(s)" "$dir/out") -eq 1 ]] || { cat "$dir/out"; fail "not one summary"; }
grep -q '"world_size": 2' "$dir/straight.json" || fail "metrics.json does not say 2 ranks"
echo "ok: 2 ranks trained ($(grep -o 'best, at step.*' "$dir/out"))"

# 2. Stopped and resumed: the same final loss as the uninterrupted run.
"$mpirun" -np 2 --oversubscribe "$words" "${small[@]}" --out "$dir/halves" --stop-after 20 \
  >"$dir/out" 2>"$dir/err" || { cat "$dir/out" "$dir/err"; fail "the first half failed"; }
"$mpirun" -np 2 --oversubscribe "$words" "${small[@]}" --out "$dir/halves" --resume \
  --metrics-json "$dir/halves.json" >"$dir/out" 2>"$dir/err" ||
  { cat "$dir/out" "$dir/err"; fail "the resumed half failed"; }
straight=$(grep '"final_loss"' "$dir/straight.json")
resumed=$(grep '"final_loss"' "$dir/halves.json")
[[ $straight == "$resumed" ]] || fail "resumed $resumed, uninterrupted $straight"
echo "ok: resumed on 2 ranks, the same final loss ($resumed)"

# 3. Refusals, before anything trains.
by_rank=(bash "$(dirname "${BASH_SOURCE[0]}")/../value_by_rank.sh")
status=0
timeout 60 "$mpirun" -np 2 --oversubscribe "${by_rank[@]}" --d-model 32 64 "$words" \
  train --distributed --data "$dict" --steps 5 --warmup 1 --quiet --out "$dir/mismatch" \
  >"$dir/out" 2>"$dir/err" || status=$?
[[ $status -ne 0 && $status -ne 124 ]] || { cat "$dir/err"; fail "different --d-model: status $status"; }
grep -qF -- "--d-model is '32' on rank 0, '64' on rank 1" "$dir/err" ||
  { cat "$dir/err"; fail "the refusal does not name --d-model"; }
[[ ! -e $dir/mismatch/last.safetensors ]] || fail "ranks with different --d-model trained"
status=0
timeout 60 "$mpirun" -np 2 --oversubscribe "$words" train --distributed --data "$dict" --steps 5 \
  --warmup 1 --batch 15 --quiet --out "$dir/odd" >"$dir/out" 2>"$dir/err" || status=$?
[[ $status -ne 0 && $status -ne 124 ]] || { cat "$dir/err"; fail "--batch 15: status $status"; }
[[ $(grep -c -- "--batch: a batch of 15 does not split evenly over 2 ranks" "$dir/err") -eq 1 ]] ||
  { cat "$dir/err"; fail "--batch 15 is not refused by name, once"; }
grep -q "error on rank" "$dir/err" && { cat "$dir/err"; fail "--batch 15 ended the job as one rank's error"; }
# Another dictionary on rank 1 (each rank reads its own copy): it trained on a mix, unnoticed.
head -n 300 "$dict" >"$dir/other.dict"
status=0
timeout 60 "$mpirun" -np 2 --oversubscribe "${by_rank[@]}" --data "$dict" "$dir/other.dict" \
  "$words" train --distributed --steps 5 --warmup 1 --quiet --out "$dir/data" \
  >"$dir/out" 2>"$dir/err" || status=$?
[[ $status -ne 0 && $status -ne 124 ]] || { cat "$dir/err"; fail "another --data: status $status"; }
grep -qF -- "--data is 'a file of" "$dir/err" && grep -qF "on rank 1" "$dir/err" ||
  { cat "$dir/err"; fail "another --data on rank 1 is not refused by name"; }
[[ ! -e $dir/data/last.safetensors ]] || fail "ranks with other dictionaries trained"
# Started by mpirun without --distributed: two whole runs into one --out.
status=0
timeout 60 "$mpirun" -np 2 --oversubscribe "$words" train --data "$dict" --steps 5 --warmup 1 \
  --quiet --out "$dir/alone" >"$dir/out" 2>"$dir/err" || status=$?
[[ $status -ne 0 && $status -ne 124 ]] || { cat "$dir/err"; fail "no --distributed: status $status"; }
[[ $(grep -c "mpirun started 2 processes, but without --distributed" "$dir/err") -eq 1 ]] ||
  { cat "$dir/err"; fail "mpirun without --distributed is not refused once"; }
echo "ok: refused: another --d-model or --data on rank 1, --batch 15 on 2 ranks, no --distributed"
