#!/usr/bin/env bash
# The copy_task command line: every bad input gets a one-line error and a non-zero exit, never a
# crash; good input works. Usage: cli_test.sh path/to/copy_task
set -uo pipefail
bin=$1
source "$(dirname "${BASH_SOURCE[0]}")/../support/cli_testing.sh"

expect_error "--bogus" train --bogus
expect_error "--dropout: '0x1p-3' is not a number in [0, 1)" train --dropout 0x1p-3 --steps 1 \
  --out "$dir/x"
expect_error "--label-smoothing: '' is not a number" train --label-smoothing '' --steps 1 --out "$dir/x"
# Thread counts: bounded, and the environment's read strictly (a typo is not "every core").
expect_error "--threads: '4096' is not an integer in [1, " train --threads 4096 --steps 1 --out "$dir/x"
for bad in 0 abc -3 99999; do
  SCRATCHGRAD_NUM_THREADS=$bad expect_error \
    "SCRATCHGRAD_NUM_THREADS: expected a whole number of threads from 1 to 1024, got '$bad'" \
    train --steps 1 --out "$dir/threads-$bad"
done
expect_error "--metrics-json $dir/x/model.safetensors is a checkpoint's name in the run directory" \
  train --steps 1 --out "$dir/x" --metrics-json "$dir/x/model.safetensors"
expect_error "--metrics-json $dir/x/loss.svg is the run's loss.svg" \
  train --steps 1 --out "$dir/x" --metrics-json "$dir/x/loss.svg"
expect_error "A subcommand is required" 
expect_error "d_model 30 is not divisible by heads 4" train --d-model 30 --heads 4 --steps 1 --out "$dir/x"
expect_error "min-len must be in [2, length=10]" train --min-len 12 --steps 1 --out "$dir/x"
if ! nvidia-smi -L >/dev/null 2>&1; then  # without a GPU, --device cuda is a clear error
  expect_error "--device cuda" train --device cuda --steps 1 --out "$dir/x"
fi
expect_error "does not exist" decode --checkpoint "$dir/missing.safetensors" "1 2 3"
head -c 100 /dev/urandom >"$dir/garbage.safetensors"
expect_error "garbage.safetensors" decode --checkpoint "$dir/garbage.safetensors" "1 2 3"
expect_error "garbage.safetensors" eval --checkpoint "$dir/garbage.safetensors"
expect_error "--resume: no checkpoint" train --resume --steps 1 --out "$dir/empty"
expect_error "--sync-every: '0' is not an integer in [1, 1000000000]" train --sync-every 0 --steps 1 --out "$dir/x"
# Numbers a plain conversion would wrap or read loosely: refused by the flag's check.
expect_error "--sync-every: '99999999999999999999' is not an integer" train --sync-every 99999999999999999999 --steps 1 --out "$dir/x"
expect_error "--seed: '-1' is not a non-negative integer" eval --checkpoint "$dir/none.safetensors" --seed -1
expect_error "--data-seed: '0x10' is not a non-negative integer" capture --checkpoint "$dir/none.safetensors" --out "$dir/c.safetensors" --data-seed 0x10
expect_error "--cuda-graph needs --device cuda (got --device cpu)" train --cuda-graph --steps 1 --out "$dir/x"
expect_error "--tf32 is for float32 products on CUDA" train --tf32 --steps 1 --out "$dir/x"

# 256 threads in a 4 GiB address space train (OpenBLAS gets at most one thread per core; it used to
# get 256, run out of memory and hang). On a machine of many cores OpenBLAS's buffers (one per
# core) and 256 thread stacks may not fit in 4 GiB (a 16-core GPU machine started 226 of them):
# then the run stops at once, naming the thread it could not start. Either way, never a hang.
# Not under AddressSanitizer, which needs terabytes of address space.
if ! grep -q __asan_init "$bin"; then
  printf '#!/usr/bin/env bash\nulimit -v 4194304\nexec %q "$@"\n' "$bin" >"$dir/in_4_gib"
  chmod +x "$dir/in_4_gib"
  unlimited_bin=$bin bin=$dir/in_4_gib
  threads_256=(train --threads 256 --steps 2 --batch 8 --eval-every 2 --eval-samples 4
    --final-samples 4 --quiet --out "$dir/threads-256")
  if timeout 300 "$bin" "${threads_256[@]}" >/dev/null 2>&1 </dev/null; then
    expect_ok "saved model" "${threads_256[@]}" --overwrite
  else
    expect_error "parallel: cannot start thread" "${threads_256[@]}" --overwrite
  fi
  bin=$unlimited_bin
fi

# A quickly trained model for the decode paths (accuracy does not matter here).
expect_ok "saved model" train --steps 20 --batch 8 --eval-every 10 --eval-samples 4 --final-samples 4 \
  --quiet --out "$dir/run"
expect_ok "saved model" train --steps 20 --batch 8 --eval-every 10 --eval-samples 4 --final-samples 4 \
  --sync-every 3 --quiet --out "$dir/run3"
ckpt="$dir/run/model.safetensors"
printf 'not a checkpoint of ours' >"$dir/truncated.safetensors"
expect_error "truncated.safetensors" decode --checkpoint "$dir/truncated.safetensors" "1 2"
head -c 200 "$ckpt" >"$dir/cut.safetensors"
expect_error "cut.safetensors" decode --checkpoint "$dir/cut.safetensors" "1 2"
expect_error "token 11 is outside the vocabulary" decode --checkpoint "$ckpt" "1 2 11"
expect_error "token 0 is outside the vocabulary" decode --checkpoint "$ckpt" "1 0 3"
expect_error "'x' is not a token id" decode --checkpoint "$ckpt" "1 x 3"
expect_error "longer than the model's length 10" decode --checkpoint "$ckpt" "1 2 3 4 5 6 7 8 9 10 2"
expect_ok "->" decode --checkpoint "$ckpt" "1 5 3 9"
# An output that is a FIFO is refused and stays a FIFO (the rename of an atomic write would have
# replaced it, or, as root, a device such as /dev/full, with a regular file).
mkfifo "$dir/fifo"
expect_error "cannot write $dir/fifo: it is a FIFO" eval --checkpoint "$ckpt" --metrics-json "$dir/fifo"
[[ -p $dir/fifo ]] || { echo "FAIL: eval replaced the FIFO"; failures=$((failures + 1)); }
expect_error "anomaly: '" train --detect-anomaly --lr-factor 1e30 --warmup 1 --steps 3 --batch 8 \
  --eval-every 2 --out "$dir/blowup"
expect_ok "no divergence beyond atol 1e-05" compare "$ckpt" "$ckpt"
"$bin" train --steps 2 --batch 4 --eval-every 1 --seed 99 --quiet --out "$dir/other" >/dev/null 2>&1
# Two differently seeded models diverge: exit status 1, the verdict on standard output.
if "$bin" compare "$ckpt" "$dir/other/model.safetensors" >"$dir/out" 2>&1; then
  echo "FAIL: compare of two different models exited 0"; failures=$((failures + 1))
elif ! grep -qF "first divergence beyond atol" "$dir/out"; then
  echo "FAIL: compare output lacks the verdict:"; cat "$dir/out"; failures=$((failures + 1))
else
  passes=$((passes + 1))
fi
expect_error "cannot open $dir/missing.safetensors" compare "$ckpt" "$dir/missing.safetensors"
expect_ok "module outputs, their gradients" capture --checkpoint "$ckpt" --batch-size 2 \
  --batch-out "$dir/batch.safetensors" --out "$dir/capture.safetensors"
expect_ok "no divergence beyond atol 1e-05" compare "$dir/capture.safetensors" "$dir/capture.safetensors"
expect_error "checkpoint $dir/nothing.safetensors does not exist" capture \
  --checkpoint "$dir/nothing.safetensors" --out "$dir/c.safetensors"
SCRATCHGRAD_PLANTED_BUG=typo expect_error "unknown planted bug" capture --checkpoint "$ckpt" \
  --out "$dir/c.safetensors"
expect_ok "step 3: " decode --checkpoint "$ckpt" --print-logits "1 5 3 9"
expect_error "does not combine with --beam 2" decode --checkpoint "$ckpt" --print-logits --beam 2 "1 5"
expect_ok "->" decode --checkpoint "$ckpt" --beam 3 "5 3 9"
expect_ok "exact match" eval --checkpoint "$ckpt" --samples 10
# An output never replaces a checkpoint: the model it reads, or any run's (they were replaced by a
# JSON file or a capture, exit 0).
expect_error "--metrics-json $ckpt is a checkpoint" eval --checkpoint "$ckpt" --samples 2 \
  --metrics-json "$ckpt"
expect_error "--metrics-json $dir/run3/last.safetensors is a checkpoint" eval --checkpoint "$ckpt" \
  --samples 2 --metrics-json "$dir/run3/last.safetensors"
expect_error "--out $ckpt is a checkpoint" capture --checkpoint "$ckpt" --out "$ckpt"
expect_error "--batch-out $dir/run3/model.safetensors is a checkpoint" capture --checkpoint "$ckpt" \
  --out "$dir/c2.safetensors" --batch-out "$dir/run3/model.safetensors"
expect_error "--batch-out $dir/c3.safetensors is also --out" capture --checkpoint "$ckpt" \
  --out "$dir/c3.safetensors" --batch-out "$dir/c3.safetensors"
expect_error "--out $dir/new.safetensors is --checkpoint" capture --init --checkpoint \
  "$dir/new.safetensors" --out "$dir/new.safetensors"
[[ ! -e $dir/new.safetensors ]] && passes=$((passes + 1)) ||
  { echo "FAIL: capture --init wrote a model it then refused to capture"; failures=$((failures + 1)); }
# A resume to fewer steps than the run took would rewrite it as a shorter run.
expect_error "the run in $dir/run is at step 20 already, past --steps 10" train --resume --steps 10 \
  --batch 8 --eval-every 10 --eval-samples 4 --final-samples 4 --quiet --out "$dir/run"
# Hardening. An existing run is refused unless --resume or --overwrite.
expect_error "already holds a run" train --steps 2 --batch 8 --eval-every 2 --eval-samples 4 \
  --final-samples 4 --quiet --out "$dir/run"
expect_error "--resume and --overwrite exclude each other" train --resume --overwrite --out "$dir/run"
# Sizes whose product overflows, and rates that cannot train, are refused up front.
expect_error "--length: '576460752303423489' is not an integer in [2, 65536]" train \
  --length 576460752303423489 --out "$dir/y"
# The flags given override the preset, the others keep its values: --length alone makes every
# sequence that long (--min-len follows it; tiny's 10 would be refused), --norm-first switches the
# layer order, and the checkpoint's config says so.
expect_ok "saved model" train --length 6 --norm-first --steps 2 --batch 8 --eval-every 2 \
  --eval-samples 4 --final-samples 4 --quiet --out "$dir/given" --metrics-json "$dir/given.json"
for setting in '"length": "6"' '"min_len": "6"' '"norm_first": "true"' '"d_model": "32"'; do
  if grep -qF -- "$setting" "$dir/given.json"; then passes=$((passes + 1)); else
    echo "FAIL: metrics.json lacks $setting"; failures=$((failures + 1)); fi
done
expect_error "--lr-factor: 'inf' is not a number in (0, 1e+30]" train --lr-factor inf --out "$dir/y"
expect_error "--lr-factor: '0' is not a number in (0, 1e+30]" train --lr-factor 0 --out "$dir/y"
expect_error "--dropout: '1' is not a number in [0, 1)" train --dropout 1 --out "$dir/y"
# A seed of 2^64 - 1 (above 2^63: not an int64) gives checkpoints that load again. (Not written
# "-1": CLI11 2.3 reads that as 2^64 - 1 for an unsigned option, CLI11 2.4 refuses it.)
expect_ok "saved model" train --seed 18446744073709551615 --steps 2 --batch 8 --eval-every 2 --eval-samples 4 \
  --final-samples 4 --quiet --out "$dir/seed"
expect_ok "exact match" eval --checkpoint "$dir/seed/model.safetensors" --samples 4
# A full disk: /dev/full fails every write with ENOSPC; a file size limit makes writes fail too.
expect_error "No space left on device" train --steps 2 --batch 8 --eval-every 2 --eval-samples 4 \
  --final-samples 4 --quiet --log-jsonl /dev/full --out "$dir/full"
# (The limit holds for every file the process writes: its stderr goes through a pipe instead.)
(trap '' XFSZ; ulimit -f 0; exec timeout 300 "$bin" eval --checkpoint "$ckpt" --samples 4 \
  --metrics-json "$dir/limited/metrics.json" 2>&1 >/dev/null </dev/null) | cat >"$dir/err"
status=${PIPESTATUS[0]}
if [[ $status -eq 0 || $status -ge 128 ]] || ! grep -q "File too large" "$dir/err" ||
   compgen -G "$dir/limited/metrics.json*" >/dev/null; then
  echo "FAIL: --metrics-json on a full disk: status $status, files: $(ls "$dir/limited")"
  cat "$dir/err"; failures=$((failures + 1))
else
  passes=$((passes + 1))
fi
# A FIFO with no writer is refused at once, not waited on.
mkfifo "$dir/fifo.safetensors"
expect_error "not a regular file" decode --checkpoint "$dir/fifo.safetensors" "1 2"
# Checkpoint metadata parses strictly: "True" is not a boolean.
LC_ALL=C sed 's/"config.norm_first":"false"/"config.norm_first":"True" /' "$ckpt" >"$dir/true.safetensors"
expect_error "'norm_first' = 'True' is not true or false" decode --checkpoint "$dir/true.safetensors" "1 2"

# Numbers too large for their type are refused, not saturated; sizes have upper bounds.
expect_error "--steps: '99999999999999999999' is not an integer in [1, 1000000000]" train \
  --steps 99999999999999999999 --out "$dir/y"
expect_error "--batch: '4611686018427387904' is not an integer in [1, 65536]" train \
  --batch 4611686018427387904 --out "$dir/y"
expect_error "--layers: '1000000' is not an integer in [1, 64]" train --layers 1000000 --out "$dir/y"
# capture --init never replaces an existing file (a trained model).
cp "$ckpt" "$dir/before.safetensors"
expect_error "capture --init: $ckpt already exists" capture --init --checkpoint "$ckpt" \
  --out "$dir/c.safetensors"
if cmp -s "$ckpt" "$dir/before.safetensors"; then passes=$((passes + 1)); else
  echo "FAIL: capture --init changed $ckpt"; failures=$((failures + 1)); fi
# --resume continues the run it finds: another task (or model, or recipe) is refused by flag.
expect_error "--task is copy in $dir/run/last.safetensors, reverse now" train --resume \
  --task reverse --steps 30 --batch 8 --eval-every 10 --eval-samples 4 --final-samples 4 \
  --quiet --out "$dir/run"
expect_ok "saved model" train --resume --steps 24 --batch 8 --eval-every 12 --eval-samples 4 \
  --final-samples 4 --quiet --out "$dir/run"

# stdin: one sequence per line
if decoded=$(printf '1 2 3\n1 4 5 6\n' | "$bin" decode --checkpoint "$ckpt" 2>"$dir/err") &&
  [[ $(grep -c -- '->' <<<"$decoded") -eq 2 ]]; then
  passes=$((passes + 1))
else
  echo "FAIL: decode from stdin"; cat "$dir/err"; failures=$((failures + 1))
fi

cli_summary
