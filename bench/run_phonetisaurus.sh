#!/usr/bin/env bash
# Phonetisaurus, the classic joint-sequence n-gram G2P (a WFST from an n-gram over aligned
# letter/phoneme chunks), on scratchgrad's own split and scoring rule: the anchor of the G2P
# tables in the README and chapter 12b, measured side by side on the same machine.
#   bash bench/run_phonetisaurus.sh                  # orders 5-12 on dev, the best one on test
#   ORDERS="7 8 9" bash bench/run_phonetisaurus.sh   # fewer orders
# 1. The phonetisaurus wheel from PyPI (0.3.0: its binaries with OpenFst and mitlm's
#    estimate-ngram) in a virtual environment, made once under ~/.cache/scratchgrad.
# 2. `g2p split`: the train, dev and test words exactly as the model gets them.
# 3. Its own recipe (phonetisaurus-train's defaults): align letters to phonemes allowing phoneme
#    deletions, chunks of up to 2 on each side; a Kneser-Ney n-gram of the aligned chunks
#    (estimate-ngram); the n-gram as a WFST. The order is chosen on dev, test decoded once, 1-best.
# 4. `g2p score`: the WER and PER `g2p eval` gives the model, with and without stress.
# Writes bench/results_phonetisaurus.json and prints the table; the work files stay in
# runs/phonetisaurus/. Each tool runs on one core.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh

orders=(${ORDERS:-5 6 7 8 9 10 11 12})
out=runs/phonetisaurus
mkdir -p "$out"

bash scripts/install_deps.sh --g2p
dict=$(bash scripts/get_cmudict.sh)
build_example g2p
g2p=$build_dir/examples/g2p/g2p

# The wheel ships x86-64 binaries only.
[[ $(uname -m) == x86_64 ]] || { echo "run_phonetisaurus: the wheel's binaries are x86-64 only" >&2; exit 1; }
cache=${SCRATCHGRAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/scratchgrad}
venv=$cache/venv-phonetisaurus
if [[ ! -f $venv/.installed ]]; then
  echo "run_phonetisaurus: installing phonetisaurus==0.3.0 from PyPI into $venv"
  rm -rf "$venv"
  /usr/bin/python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check phonetisaurus==0.3.0
  touch "$venv/.installed"  # last: an interrupted install is redone
fi
package=$("$venv/bin/python" -c 'import phonetisaurus, os; print(os.path.dirname(phonetisaurus.__file__))')
export PATH="$package/bin/x86_64:$PATH" LD_LIBRARY_PATH="$package/lib/x86_64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

# seconds_of COMMAND...: runs it, prints its wall seconds (to 0.1 s) on fd 3.
seconds_of() {
  local start=$EPOCHREALTIME
  "$@"
  awk -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.1f\n", b - a }' >&3
}

echo "==== the split (g2p split)"
"$g2p" split --data "$dict" --out "$out/split" --overwrite
# The aligner reads "word<TAB>phonemes", alternates without their "(2)".
awk '{ w = $1; sub(/\(.*/, "", w); $1 = ""; sub(/^ /, ""); print w "\t" $0 }' \
  "$out/split/train.dict" >"$out/train.tsv"

echo "==== align (phonetisaurus-align)"
align_seconds=$(seconds_of phonetisaurus-align --input="$out/train.tsv" --ofile="$out/train.corpus" \
  --seq1_del=false --seq2_del=true --seq1_max=2 --seq2_max=2 --grow=false 3>&1 >"$out/align.log" 2>&1)
echo "aligned in $align_seconds s"

# model ORDER: the n-gram and its WFST; prints "estimate_seconds wfst_seconds" on fd 3.
model() {
  local order=$1 estimate wfst
  estimate=$(seconds_of estimate-ngram -o "$order" -t "$out/train.corpus" -wl "$out/order$order.arpa" \
    3>&1 >"$out/order$order.log" 2>&1)
  wfst=$(seconds_of phonetisaurus-arpa2wfst --lm="$out/order$order.arpa" \
    --ofile="$out/order$order.fst" 3>&1 >>"$out/order$order.log" 2>&1)
  rm -f "$out/order$order.arpa"
  echo "$estimate $wfst"
}
# decode ORDER SPLIT: 1-best pronunciations of the split's words; prints the seconds.
decode() {
  seconds_of phonetisaurus-g2pfst --model="$out/order$1.fst" --wordlist="$out/split/$2.words" \
    --nbest=1 --print_scores=false 3>&1 >"$out/order$1.$2.pred" 2>"$out/order$1.$2.log"
}
# wer_of JSON: the WER with stress from a `g2p score --metrics-json` file.
wer_of() { /usr/bin/python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["wer"])' "$1"; }

echo "==== orders ${orders[*]} on dev"
best_order= best_wer=2
declare -A times
for order in "${orders[@]}"; do
  read -r estimate wfst < <(model "$order")
  dev_seconds=$(decode "$order" dev)
  "$g2p" score "$out/split/dev.dict" "$out/order$order.dev.pred" --errors 0 \
    --metrics-json "$out/order$order.dev.json" | sed "s/^/order $order: /"
  wer=$(wer_of "$out/order$order.dev.json")
  times[$order]="$estimate $wfst $dev_seconds"
  if awk -v a="$wer" -v b="$best_wer" 'BEGIN { exit !(a < b) }'; then
    best_order=$order best_wer=$wer
  fi
done
echo "best on dev: order $best_order"

echo "==== test, order $best_order"
test_seconds=$(decode "$best_order" test)
"$g2p" score "$out/split/test.dict" "$out/order$best_order.test.pred" --errors 5 \
  --metrics-json "$out/test.json"

read -r estimate wfst _ <<<"${times[$best_order]}"
dev_json=$(for order in "${orders[@]}"; do
  read -r e w d <<<"${times[$order]}"
  echo "$order $e $w $d $out/order$order.dev.json"
done)
cpu=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
/usr/bin/python3 - "$out/test.json" "$best_order" "$align_seconds" "$estimate" "$wfst" \
  "$test_seconds" "$cpu" <<PY
import json, sys, datetime
test_json, order, align, estimate, wfst, decode_test, cpu = sys.argv[1:]
dev = []
for line in """$dev_json""".strip().splitlines():
    o, e, w, d, path = line.split()
    dev.append({"order": int(o), "estimate_seconds": float(e), "wfst_seconds": float(w),
                "decode_seconds": float(d), **json.load(open(path))})
result = {
    "what": "Phonetisaurus 0.3.0 (PyPI) on scratchgrad's G2P split, scored by g2p score",
    "date": datetime.date.today().isoformat(),
    "cpu": cpu,
    "recipe": {"align": "--seq1_del=false --seq2_del=true --seq1_max=2 --seq2_max=2 --grow=false",
               "ngram": "estimate-ngram (mitlm, modified Kneser-Ney), order chosen on dev",
               "decode": "phonetisaurus-g2pfst --nbest=1"},
    "order": int(order),
    "train_seconds": round(float(align) + float(estimate) + float(wfst), 1),
    "align_seconds": float(align), "estimate_seconds": float(estimate),
    "wfst_seconds": float(wfst), "decode_test_seconds": float(decode_test),
    "dev": dev,
    "test": json.load(open(test_json)),
}
with open("bench/results_phonetisaurus.json", "w") as f:
    json.dump(result, f, indent=1)
    f.write("\n")
t = result["test"]
print(f"Phonetisaurus order {order}: trained in {result['train_seconds']} s on one core; "
      f"test ({t['words']} words) WER {100 * t['wer']:.2f}%  PER {100 * t['per']:.2f}%  "
      f"without stress WER {100 * t['wer_no_stress']:.2f}%  PER {100 * t['per_no_stress']:.2f}%")
PY
echo "run_phonetisaurus: bench/results_phonetisaurus.json"
