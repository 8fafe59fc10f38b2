#!/usr/bin/env bash
# The g2p command line: bad data and bad flags get a one-line error and a non-zero exit, never a
# crash; a tiny run trains, evaluates and pronounces (arguments and stdin).
# Usage: cli_test.sh path/to/g2p path/to/cmudict_slice.dict
set -uo pipefail
bin=$1
dict=$2
source "$(dirname "${BASH_SOURCE[0]}")/../support/cli_testing.sh"

tiny=(--d-model 32 --heads 2 --layers 1 --ffn 64 --steps 40 --warmup 10 --lr-factor 1 --max-tokens 400
      --eval-every 20 --quiet)
expect_error "A subcommand is required"
expect_error "--bogus" train --bogus
expect_error "cannot open" train --data "$dir/missing.dict" --out "$dir/run"
printf 'good G UH1 D\nbad b AE1 D\n' >"$dir/bad.dict"
expect_error "bad.dict:2: 'b' is not an ARPAbet phoneme" train --data "$dir/bad.dict" --out "$dir/run"
# Only CMUdict's 39 phonemes: a well-shaped unknown one was learned as a new phoneme.
printf 'good G UH1 D\nweird ZZ1 AH0\n' >"$dir/unknown.dict"
expect_error "unknown.dict:2: 'ZZ1' is not an ARPAbet phoneme" train --data "$dir/unknown.dict" --out "$dir/run"
# Two words and no dev or test word: the n-gram scored nothing as WER 0%.
printf 'a AH0\nb B IY1\n' >"$dir/two.dict"
expect_error "g2p ngram: $dir/two.dict has no dev words" ngram --data "$dir/two.dict" --split dev
expect_error "multiple of --heads" train --data "$dict" --out "$dir/run" --d-model 30 --heads 4
expect_error "--max-tokens" train --data "$dict" --out "$dir/run" --max-tokens 3
expect_error "--schedule must be one of noam, cosine, got 'step'" train --data "$dict" --out "$dir/run" \
  --schedule step
expect_error "--schedule cosine needs --lr > 0" train --data "$dict" --out "$dir/run" --lr 0
expect_ok "no evaluation yet" train --data "$dict" --out "$dir/early" "${tiny[@]}" --stop-after 5
expect_error "--beam" eval --beam 0
expect_error "does not exist" pronounce --checkpoint "$dir/none.safetensors" word

expect_ok "trained 40 steps" train --data "$dict" --out "$dir/run" "${tiny[@]}" \
  --metrics-json "$dir/train.json" --log-jsonl "$dir/train.jsonl"
# The loop's numbers (sg::train::fit_result_json) and one line per evaluation.
for expected in '"steps": 40' '"d_model": "32"' '"dev_wer":' '"best_step":'; do
  grep -qF "$expected" "$dir/train.json" && passes=$((passes + 1)) || {
    echo "FAIL: train --metrics-json lacks $expected:"; cat "$dir/train.json"; failures=$((failures + 1)); }
done
[[ $(grep -c '"dev_per":' "$dir/train.jsonl") == 2 ]] && passes=$((passes + 1)) || {
  echo "FAIL: train --log-jsonl:"; cat "$dir/train.jsonl"; failures=$((failures + 1)); }
expect_error "--resume" train --data "$dict" --out "$dir/run" "${tiny[@]}"
expect_ok "(without stress: WER" eval --checkpoint "$dir/run/model.safetensors" --data "$dict" --beam 3 --split dev
# A dev word with a letter training never saw ('~'; "tilde~16" hashes into dev) is still scored,
# and eval says so.
{ cat "$dict"; echo "tilde~16  T IH1 L D AH0"; } > "$dir/unseen.dict"
expect_ok "note: 1 of the" eval --checkpoint "$dir/run/model.safetensors" --data "$dir/unseen.dict" \
  --beam 1 --split dev --errors 0
expect_ok "tensor " pronounce --checkpoint "$dir/run/model.safetensors" Tensor
printf 'hello world\n' >"$dir/words"
input=$dir/words expect_ok "world " pronounce --checkpoint "$dir/run/model.safetensors" --beam 1 \
  --attention "$dir/hello.svg"
[[ -s $dir/hello.svg ]] && passes=$((passes + 1)) || { echo "FAIL: no attention SVG"; failures=$((failures + 1)); }
expect_error "no words given" pronounce --checkpoint "$dir/run/model.safetensors"
# An output onto an input is refused before anything is written (the model, the dictionary).
expect_error "--attention $dir/run/model.safetensors is a checkpoint" pronounce \
  --checkpoint "$dir/run/model.safetensors" --attention "$dir/run/model.safetensors" tensor
expect_error "--predictions $dict is --data" ngram --data "$dict" --predictions "$dict"
expect_error "--predictions $dir/run/last.safetensors is a checkpoint" ngram --data "$dict" \
  --predictions "$dir/run/last.safetensors"
expect_error "--metrics-json $dict is REF" score "$dict" "$dict" --metrics-json "$dict"
expect_error "--metrics-json $dir/run/last.safetensors is a checkpoint" \
  train --data "$dict" --out "$dir/run" --resume "${tiny[@]}" --metrics-json "$dir/run/last.safetensors"
# Sizes its own loader would refuse are refused before training; numbers are not saturated.
expect_error "--layers: '65' is not an integer in [1, 64]" train --data "$dict" --out "$dir/x" --layers 65
expect_error "--heads: '257' is not an integer in [1, 256]" train --data "$dict" --out "$dir/x" --heads 257
expect_error "--ffn: '65537' is not an integer in [1, 65536]" train --data "$dict" --out "$dir/x" --ffn 65537
expect_error "--steps: '99999999999999999999' is not an integer" train --data "$dict" --out "$dir/x" \
  --steps 99999999999999999999
# Words the model cannot take are found when the dictionary is read, with the file and line.
{ printf 'good G UH1 D\ncaf\xc3\xa9 K AE0 F EY1\n'; cat "$dict"; } >"$dir/accent.dict"
expect_error "accent.dict:2: the word" train --data "$dir/accent.dict" --out "$dir/x" "${tiny[@]}"
[[ ! -e $dir/x/last.safetensors ]] && passes=$((passes + 1)) || {
  echo "FAIL: a checkpoint was written from a dictionary with a bad word"; failures=$((failures + 1)); }
# A FIFO as --data is refused at once (it used to block forever).
mkfifo "$dir/fifo.dict"
expect_error "is not a regular file" train --data "$dir/fifo.dict" --out "$dir/x"
# A resumed run keeps its configuration.
expect_error "--label-smoothing is 0.1 in $dir/run/last.safetensors, 0.3 now" train --data "$dict" \
  --out "$dir/run" "${tiny[@]}" --resume --label-smoothing 0.3
# pronounce: a word the model cannot spell is named on stderr (exit 1), the others still come,
# and any number of words is decoded in batches.
"$bin" pronounce --checkpoint "$dir/run/model.safetensors" --beam 1 tensor r2d2 world \
  >"$dir/out" 2>"$dir/err" </dev/null
status=$?
if [[ $status -eq 1 ]] && grep -q "cannot pronounce 'r2d2': its letter '2'" "$dir/err" &&
   grep -q "^tensor " "$dir/out" && grep -q "^world " "$dir/out"; then
  passes=$((passes + 1))
else
  echo "FAIL: pronounce with an unspellable word: status $status"; cat "$dir/out" "$dir/err"
  failures=$((failures + 1))
fi
# A control byte in a word is quoted escaped: the message never drives the terminal.
printf 'te\033[31mst\n' | "$bin" pronounce --checkpoint "$dir/run/model.safetensors" --beam 1 \
  >"$dir/out" 2>"$dir/err"
if grep -qF "cannot pronounce 'te\x1b[31mst'" "$dir/err" && ! grep -q $'\033' "$dir/err"; then
  passes=$((passes + 1))
else
  echo "FAIL: a control byte in a word"; cat -v "$dir/err"; failures=$((failures + 1))
fi
# The first 300 headwords (awk stops reading the file itself: no pipe for it to close early).
awk '!/^;;;/ { sub(/\(.*/, "", $1); print $1; if (++n == 300) exit }' "$dict" >"$dir/many"
input=$dir/many expect_ok "abbreviate " pronounce --checkpoint "$dir/run/model.safetensors" --beam 2
[[ $(wc -l <"$dir/out") -eq 300 ]] && passes=$((passes + 1)) || {
  echo "FAIL: pronounce of 300 words printed $(wc -l <"$dir/out") lines"; failures=$((failures + 1)); }
expect_error "not a valid safetensors file" pronounce --checkpoint "$dir/run/loss.svg" w

# The recipe's levers: --bf16, --ema, --average-last; tune (dev only) and average.
expect_ok "mean of the checkpoints at steps 30, 40" train --data "$dict" --out "$dir/levers" \
  "${tiny[@]}" --bf16 --ema 0.99 --checkpoint-every 10 --average-last 2
expect_ok "the trained weights, step 40" eval --checkpoint "$dir/levers/last.safetensors" \
  --data "$dict" --beam 1 --split dev --limit 20
expect_ok "the mean of the weights at steps [30, 40]" eval \
  --checkpoint "$dir/levers/averaged.safetensors" --data "$dict" --beam 1 --split dev --limit 20
expect_ok "lowest dev WER: --beam" tune --checkpoint "$dir/levers/averaged.safetensors" \
  --data "$dict" --beams 1,2 --length-penalties 0.6,1 --limit 20
expect_ok "the mean of" average --run "$dir/levers" --last 2 --out "$dir/mean.safetensors"
expect_error "is one of the checkpoints averaged" average "$dir/mean.safetensors" \
  "$dir/levers/checkpoint-40.safetensors" --out "$dir/mean.safetensors" --overwrite
# A step's name is the run's (its next step checkpoint would prune the mean).
expect_error "has a step checkpoint's name" average --run "$dir/levers" --last 2 \
  --out "$dir/levers/checkpoint-99.safetensors"
# average never replaces a file unless asked: not the run's model, nor last.safetensors (which
# resuming needs), nor its own earlier output; and --last belongs to --run.
model_before=$(sha256sum <"$dir/levers/model.safetensors")
expect_error "average: --out $dir/levers/model.safetensors exists; add --overwrite to replace it" \
  average --run "$dir/levers" --last 2 --out "$dir/levers/model.safetensors"
[[ $(sha256sum <"$dir/levers/model.safetensors") == "$model_before" ]] ||
  { echo "FAIL: average replaced the run's model"; failures=$((failures + 1)); }
expect_error "exists; add --overwrite" average --run "$dir/levers" --out "$dir/levers/last.safetensors"
expect_error "exists; add --overwrite" average --run "$dir/levers" --out "$dir/mean.safetensors"
expect_ok "the mean of" average --run "$dir/levers" --out "$dir/mean.safetensors" --overwrite
expect_error "--last requires --run" average "$dir/levers/checkpoint-40.safetensors" --last 2 \
  --out "$dir/mean2.safetensors"
# An output path that is a FIFO (or a device) is refused and left as it was, never replaced by a
# regular file (as root, --out /dev/full replaced the machine's /dev/full).
mkfifo "$dir/fifo"
expect_error "cannot write $dir/fifo: it is a FIFO" average --run "$dir/levers" --out "$dir/fifo" \
  --overwrite
expect_error "it is a FIFO" pronounce --checkpoint "$dir/levers/model.safetensors" \
  --attention "$dir/fifo" word
[[ -p $dir/fifo ]] || { echo "FAIL: the FIFO was replaced"; failures=$((failures + 1)); }
expect_error "--ema must be a decay in (0, 1)" train --data "$dict" --out "$dir/x" --ema 0.999999999999999999
# Numbers are decimal and whole: "" is not 0, and hexadecimal floats, inf and nan are not numbers.
expect_error "--ema: '' is not a number in [0, 1]" train --data "$dict" --out "$dir/x" --ema ''
expect_error "--dropout: '0x1p-3' is not a number in [0, 1)" train --data "$dict" --out "$dir/x" \
  --dropout 0x1p-3
expect_error "--lr: 'inf' is not a number" train --data "$dict" --out "$dir/x" --lr inf
expect_error "--limit: '-1' is not an integer in [0, 1000000000]" eval \
  --checkpoint "$dir/levers/model.safetensors" --data "$dict" --limit -1
expect_error "--checkpoint-every must be positive" train --data "$dict" --out "$dir/x" \
  --average-last 3 --checkpoint-every 0
expect_error "--beam: '0x5' is not an integer in [1, 64]" eval --beam 0x5
expect_error "--order: ' 5' is not an integer in [1, 8]" ngram --order ' 5'
expect_error "--beams: '' is not an integer in [1, 64]" tune --beams ''

# split and score: the split as dictionary files for another G2P system, and predictions scored
# as eval scores the model (here the test split itself: a perfect prediction).
split=$dir/split
expect_ok "test: " split --data "$dict" --out "$split"
for f in train.dict dev.dict test.dict dev.words test.words; do
  [[ -s $split/$f ]] && passes=$((passes + 1)) || {
    echo "FAIL: split wrote no $f"; failures=$((failures + 1)); }
done
written=$(cat "$split/train.dict" "$split/dev.dict" "$split/test.dict" | wc -l)
in_dict=$(grep -c '^[^;]' "$dict")
[[ $written -eq $in_dict ]] && passes=$((passes + 1)) || {
  echo "FAIL: split wrote $written pronunciations of $in_dict"; failures=$((failures + 1)); }
expect_error "train.dict exists (give --overwrite" split --data "$dict" --out "$split"
expect_ok "train: " split --data "$dict" --out "$split" --overwrite
# Never onto the dictionary it splits, even with --overwrite (it became its own train split).
cp "$split/train.dict" "$dir/own.dict" && mkdir -p "$dir/own" && cp "$dir/own.dict" "$dir/own/train.dict"
expect_error "g2p split --out $dir/own/train.dict is --data" split --data "$dir/own/train.dict" \
  --out "$dir/own" --overwrite
# An upper-case dictionary (CMUdict 0.7b's case) is read in lower case, as words are pronounced.
awk '/^;;;/ { print; next } { $1 = toupper($1); print }' "$dict" >"$dir/upper.dict"
expect_ok "train: " split --data "$dir/upper.dict" --out "$dir/upper-split"
cmp -s "$dir/upper-split/test.dict" "$split/test.dict" && passes=$((passes + 1)) ||
  { echo "FAIL: an upper-case dictionary splits differently"; failures=$((failures + 1)); }
expect_ok "words): WER 0.00%  PER 0.00%  (without stress: WER 0.00%  PER 0.00%)" score \
  "$split/test.dict" "$split/test.dict" --metrics-json "$dir/score.json"
grep -qF '"wer": 0.0' "$dir/score.json" && passes=$((passes + 1)) || {
  echo "FAIL: score --metrics-json:"; cat "$dir/score.json"; failures=$((failures + 1)); }
# Phonetisaurus g2pfst's lines (word, score, phonemes) for one test word: the others are missing.
awk '{ w = $1; $1 = ""; sub(/^ /, ""); printf "%s\t-1.5\t%s\n", w, $0; exit }' "$split/test.dict" \
  >"$dir/one.pred"
expect_ok "WER " score "$split/test.dict" "$dir/one.pred"
grep -qF "have no prediction in $dir/one.pred" "$dir/err" && passes=$((passes + 1)) || {
  echo "FAIL: no warning of missing predictions:"; cat "$dir/err"; failures=$((failures + 1)); }
expect_error "cannot open '$dir/none.pred'" score "$split/test.dict" "$dir/none.pred"
expect_error "--names" compare "$split/test.dict" "$dir/one.pred" "$dir/one.pred" --names one

# The joint-sequence n-gram alone (its predictions are a predictions file too), then beside the
# model: eval and tune choose from both n-best lists by --ngram-weight.
expect_ok "graphones (0 pronunciations left unaligned), trained in" ngram --data "$dict" --order 4 --split test --predictions "$dir/ngram.pred"
expect_ok "words): WER " score "$split/test.dict" "$dir/ngram.pred"
# compare: the n-gram's predictions against the one g2pfst line, side by side; the reference
# against it gets every word but one right that the line gets wrong.
expect_ok "oracle" compare "$split/test.dict" "$dir/ngram.pred" "$dir/one.pred" --names ngram,other \
  --train "$split/train.dict" --metrics-json "$dir/compare.json"
grep -qF "ngram wrong words by kind" "$dir/out" && passes=$((passes + 1)) || {
  echo "FAIL: compare printed no mistake kinds:"; cat "$dir/out"; failures=$((failures + 1)); }
expect_ok "all words" compare "$split/test.dict" "$split/test.dict" "$dir/one.pred" \
  --metrics-json "$dir/compare.json"
tests=$(grep -c '^[^(]*$' <(sed 's/ .*//' "$split/test.dict"))
grep -qF "\"only_first\": $((tests - 1))," "$dir/compare.json" && passes=$((passes + 1)) || {
  echo "FAIL: compare --metrics-json, not $((tests - 1)) words only the first got right:"
  cat "$dir/compare.json"; failures=$((failures + 1)); }
expect_ok "with the n-gram at weight 0.5: WER" eval --checkpoint "$dir/run/model.safetensors" \
  --data "$dict" --beam 3 --ngram-weight 0.5 --ngram-order 4
expect_ok "--ngram-weight" tune --checkpoint "$dir/run/model.safetensors" --data "$dict" --beams 2 \
  --length-penalties 1 --ngram-weights 0,1 --ngram-order 3
expect_error "--ngram-order" eval --checkpoint "$dir/run/model.safetensors" --ngram-order 9
expect_error "--ngram-weight" eval --checkpoint "$dir/run/model.safetensors" --ngram-weight -1
expect_error "--order" ngram --data "$dict" --order 0
expect_error "--limit" ngram --data "$dict" --limit -1
printf 'tensor T EH1 N S er0\n' >"$dir/bad.pred"
expect_error "bad.pred:1: 'er0' is not an ARPAbet phoneme" score "$split/test.dict" "$dir/bad.pred"

cli_summary
