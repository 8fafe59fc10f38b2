#!/usr/bin/env bash
# copy_task train --distributed from the command line, under mpirun -np 2:
#   1. the tiny preset reaches 100% held-out exact match with 2 ranks, rank 0 alone printing;
#   2. a rank killed mid-run (SIGKILL) ends the whole job within seconds with a non-zero status
#      and a message naming the dead rank, and the last checkpoint on disk still loads.
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
  if tr '\0' '\n' <"/proc/$child/environ" 2>/dev/null | grep -qx 'OMPI_COMM_WORLD_RANK=1'; then
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
