#!/usr/bin/env bash
# copy_task train --distributed from the command line, under mpirun -np 2:
#   1. the tiny preset reaches 100% held-out exact match with 2 ranks, rank 0 alone printing;
#   2. a rank killed mid-run (SIGKILL) ends the whole job within seconds with a non-zero status
#      and a message naming the dead rank, and the last checkpoint on disk still loads;
#   3. ranks started with a different --batch, --seed, --task or --steps are refused at once, with
#      one message naming the flag and each rank's value;
#   4. --zero1 reports each rank's share of the optimizer state.
# Usage: cli_test.sh <copy_task binary> <mpirun>
set -euo pipefail
copy_task=$1
mpirun=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OPENBLAS_NUM_THREADS=1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# 1. Two ranks, one BLAS thread each, to 100%.
"$mpirun" -np 2 --oversubscribe "$copy_task" train --distributed --threads 1 --steps 800 \
  --eval-every 100 --final-samples 200 --quiet --out "$dir/run" --metrics-json "$dir/metrics.json" \
  >"$dir/stdout" 2>"$dir/stderr" || { cat "$dir/stdout" "$dir/stderr"; fail "2-rank training failed"; }
grep -q '"world_size": 2' "$dir/metrics.json" || fail "metrics.json does not say 2 ranks"
grep -Eq '"first_perfect_step": [0-9]+' "$dir/metrics.json" ||
  { cat "$dir/metrics.json"; fail "2 ranks never reached 100% held-out exact match"; }
grep -Eq '"exact_match": (1|1\.0|0\.99[0-9]*)[,}]?$' "$dir/metrics.json" ||
  { cat "$dir/metrics.json"; fail "the saved model is below 99% exact match"; }
[[ $(grep -c '^training tiny' "$dir/stdout") -eq 1 ]] || fail "more than one rank printed"
grep -q "2 ranks, each 40 sequences of every batch of 80" "$dir/stdout" || fail "no rank summary"
echo "ok: 2 ranks reached 100% ($(grep first_perfect_step "$dir/metrics.json"))"

# 2. Kill rank 1 mid-run; the job must end by itself, well before `timeout` would end it.
"$mpirun" -np 2 --oversubscribe "$copy_task" train --distributed --threads 1 --steps 1000000 \
  --checkpoint-every 20 --eval-every 1000000 --quiet --out "$dir/killed" \
  >"$dir/killed.out" 2>"$dir/killed.err" &
launcher=$!
for _ in $(seq 1 600); do
  [[ -f $dir/killed/last.safetensors ]] && break
  sleep 0.1
done
[[ -f $dir/killed/last.safetensors ]] || { kill "$launcher"; fail "no checkpoint within 60 s"; }
victim=""
for child in $(ps -o pid= --ppid "$launcher"); do
  environment=$(tr '\0' '\n' <"/proc/$child/environ" 2>/dev/null) || continue
  if grep -qx 'OMPI_COMM_WORLD_RANK=1' <<<"$environment"; then
    victim=$child
  fi
done
[[ -n $victim ]] || { kill "$launcher"; fail "rank 1's process not found under mpirun"; }
killed_at=$(date +%s.%N)
kill -KILL "$victim"
status=0
timeout 30 tail --pid="$launcher" -f /dev/null || { kill "$launcher"; fail "the job still runs 30 s after rank 1 died"; }
wait "$launcher" || status=$?
ended_in=$(awk -v a="$killed_at" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
[[ $status -ne 0 ]] || fail "mpirun exited 0 although rank 1 was killed"
grep -qi "signal 9\|killed" "$dir/killed.err" || { cat "$dir/killed.err"; fail "no message about the killed rank"; }
echo "ok: the job ended ${ended_in} s after rank 1 was killed, status $status"
"$copy_task" eval --checkpoint "$dir/killed/last.safetensors" --samples 10 >"$dir/eval.out" ||
  fail "the last checkpoint does not load"
echo "ok: the last checkpoint loads: $(cat "$dir/eval.out")"

# 3. One rank given another value of a flag (value_by_rank.sh passes each rank its value).
by_rank=(bash "$(dirname "${BASH_SOURCE[0]}")/../value_by_rank.sh")
common=(train --distributed --threads 1 --eval-every 5 --final-samples 10 --quiet)
for case in "--batch 80 40" "--seed 0 5" "--task copy reverse" "--steps 5 7" \
  "--kernels fast reference"; do
  read -r flag zero one <<<"$case"
  steps=(--steps 5)
  [[ $flag != --steps ]] || steps=()
  status=0
  started=$(date +%s)
  timeout 60 "$mpirun" -np 2 --oversubscribe "${by_rank[@]}" "$flag" "$zero" "$one" \
    "$copy_task" "${common[@]}" "${steps[@]}" --out "$dir/mismatch" \
    >"$dir/mismatch.out" 2>"$dir/mismatch.err" || status=$?
  [[ $status -ne 0 && $status -ne 124 ]] ||
    { cat "$dir/mismatch.err"; fail "ranks with $flag $zero and $one: status $status"; }
  expected="$flag is '$zero' on rank 0, '$one' on rank 1"
  [[ $(grep -c "the ranks were started with different settings" "$dir/mismatch.err") -eq 1 ]] ||
    { cat "$dir/mismatch.err"; fail "not one message for $flag $zero / $one"; }
  grep -qF -- "$expected" "$dir/mismatch.err" ||
    { cat "$dir/mismatch.err"; fail "the message does not say: $expected"; }
  [[ ! -e $dir/mismatch/last.safetensors ]] || fail "ranks with different $flag trained"
  echo "ok: refused in $(($(date +%s) - started)) s: $expected"
done

# 4. ZeRO-1 from the command line.
"$mpirun" -np 2 --oversubscribe "$copy_task" "${common[@]}" --steps 5 --zero1 --out "$dir/zero1" \
  >"$dir/zero1.out" 2>"$dir/zero1.err" || { cat "$dir/zero1.out" "$dir/zero1.err"; fail "--zero1"; }
grep -q "optimizer state per rank: .* MB (ZeRO-1" "$dir/zero1.out" ||
  { cat "$dir/zero1.out"; fail "--zero1 does not report the state per rank"; }
echo "ok: $(grep "optimizer state per rank" "$dir/zero1.out")"
