#!/usr/bin/env bash
# Kill a training run at random moments, resume it each time, and check that it still ends bit for
# bit where an uninterrupted run ends, with no temporary file left behind.
# Usage: kill_resume_test.sh path/to/copy_task [kills, default 24] [seed, default 19]
#
# One episode: start the run (--resume once last.safetensors exists, else --overwrite), SIGKILL
# it after a random delay up to the length of a whole run, and again, until a start runs to the
# end; then compare its files with the uninterrupted run's. Episodes repeat until `kills` kills.
# The delays come from bash's RANDOM seeded with `seed`: the same moments on every run of the
# test (up to the machine's timing). Nothing can hang: the uninterrupted run is under `timeout`,
# and every other start is killed or done after its delay.
set -uo pipefail
bin=$1
want_kills=${2:-24}
RANDOM=${3:-19}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# Small and quick, but with all the state a resume must restore: dropout (the global generator),
# held-out evaluations (best model, history), a checkpoint every 3 steps.
args=(train --steps 30 --batch 8 --eval-every 5 --eval-samples 8 --final-samples 8
      --checkpoint-every 3 --dropout 0.1 --threads 1 --quiet)

now_ms() { date +%s%3N; }

start=$(now_ms)
if ! timeout 60 "$bin" "${args[@]}" --out "$dir/straight" >"$dir/straight.log" 2>&1; then
  echo "FAIL: the uninterrupted run failed:"; cat "$dir/straight.log"; exit 1
fi
run_ms=$(( $(now_ms) - start ))
echo "uninterrupted run: ${run_ms} ms"

# The checkpoints' tensors (weights, Adam's state) to the bit, through `copy_task compare` with no
# tolerance (their metadata holds wall-clock times, which differ); the charts byte for byte.
checkpoints=(model.safetensors last.safetensors)
charts=(loss.svg accuracy.svg)
kills=0 episodes=0 failures=0 deadline=$(( $(date +%s) + 200 ))
while (( kills < want_kills )); do
  if (( $(date +%s) > deadline )); then
    echo "FAIL: only $kills kills in the time allowed"; exit 1
  fi
  episodes=$((episodes + 1))
  out="$dir/episode$episodes"
  episode_kills=0
  while :; do
    mode=--overwrite
    [[ -f $out/last.safetensors ]] && mode=--resume
    # Started directly (not under `timeout`, whose own pid the kill would hit, leaving the
    # trainer running): every start is killed or has exited by the end of the delay, so none can
    # hang.
    "$bin" "${args[@]}" "$mode" --out "$out" >"$out.log" 2>&1 &
    pid=$!
    # A random moment within a whole run's length: while starting, training, evaluating, or
    # writing a checkpoint.
    delay_ms=$(( (RANDOM * 32768 + RANDOM) % (run_ms + 1) ))
    sleep "$(printf '%d.%03d' $((delay_ms / 1000)) $((delay_ms % 1000)))"
    kill -KILL "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    status=$?
    if [[ $status -eq 137 ]]; then  # killed (128 + SIGKILL), not already done
      kills=$((kills + 1)) episode_kills=$((episode_kills + 1))
      continue
    fi
    if [[ $status -ne 0 ]]; then
      echo "FAIL: episode $episodes: '$mode' after $episode_kills kills exited with $status:"
      cat "$out.log"; failures=$((failures + 1))
    fi
    break
  done
  for file in "${checkpoints[@]}"; do
    if ! "$bin" compare "$dir/straight/$file" "$out/$file" --atol 0 --rtol 0 >"$out.compare" 2>&1
    then
      echo "FAIL: episode $episodes ($episode_kills kills): $file differs from the uninterrupted run's:"
      cat "$out.compare"; failures=$((failures + 1))
    fi
  done
  for file in "${charts[@]}"; do
    if ! cmp -s "$dir/straight/$file" "$out/$file"; then
      echo "FAIL: episode $episodes ($episode_kills kills): $file differs from the uninterrupted run's"
      failures=$((failures + 1))
    fi
  done
  stray=$(find "$out" -name '*.tmp-*')
  if [[ -n $stray ]]; then
    echo "FAIL: episode $episodes left temporary files: $stray"; failures=$((failures + 1))
  fi
  echo "episode $episodes: $episode_kills kills, then finished"
done
echo "kill_resume_test: $kills kills in $episodes episodes, $failures failures"
[[ $failures -eq 0 ]]
