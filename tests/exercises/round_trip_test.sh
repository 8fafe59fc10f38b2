#!/usr/bin/env bash
# Exercise mode without a build (a few seconds): every exercise's markers resolve; for every
# chapter, `exercise.sh start` writes stubs that throw the exercise's message with a hint, the
# spliced copy of each library file differs from the original only by the learner's #include in
# place of the region, a second start keeps the learner's work, `reset` moves the files away, and
# the repository's tracked files are exactly as before (nothing in the library is ever edited).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
python=${PYTHON:-python3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export EXERCISES_DIR=$tmp/exercises

fail() { echo "round_trip_test: $*" >&2; exit 1; }

tracked_state() { git diff HEAD --stat 2>/dev/null; git diff HEAD 2>/dev/null | sha256sum; }
in_git=false
git rev-parse --is-inside-work-tree > /dev/null 2>&1 && in_git=true
$in_git && before=$(tracked_state)

"$python" scripts/exercises.py check-markers

count=0
for chapter in 01 02 03 04 05 06 07 08 09 10 11 12; do
  bash scripts/exercise.sh start "$chapter" --no-configure > /dev/null
  mapfile -t ids < <("$python" scripts/exercises.py list "$chapter" | awk '{print $1}')
  [[ ${#ids[@]} -ge 1 ]] || fail "chapter $chapter has no exercise"
  for id in "${ids[@]}"; do
    file=$EXERCISES_DIR/$chapter/${id#*.}.cpp
    [[ -f $file ]] || fail "start $chapter wrote no $file"
    grep -q "throw sg::Error(\"exercise $id: not written yet. Hint: .\{40,\}\");" "$file" \
      || fail "$file does not throw 'exercise $id: not written yet. Hint: ...' with a real hint"
    source=$("$python" scripts/exercises.py list "$chapter" | awk -v id="$id" '$1 == id {print $2}')
    "$python" scripts/exercises.py splice "$id" "$source" "$tmp/spliced.cpp" --dir "$EXERCISES_DIR"
    # The copy, minus its generated lines, is the original minus the region's inner lines.
    "$python" - "$source" "$tmp/spliced.cpp" "$id" "$file" <<'PY'
import sys
source, spliced, ident, learner = sys.argv[1:]
marker = "ex" + ident
original = open(source, encoding="utf-8").read().splitlines()
start = next(i for i, l in enumerate(original) if f"[start:{marker}]" in l)
end = next(i for i, l in enumerate(original) if f"[end:{marker}]" in l)
expected = original[: start + 1] + original[end:]
lines = open(spliced, encoding="utf-8").read().splitlines()
includes = [l for l in lines if l.startswith("#include \"/")]
assert includes == [f'#include "{learner}"'], f"{spliced}: includes {includes}, not {learner}"
first = next(i for i, l in enumerate(lines) if l.startswith("#line 1 "))
kept = [l for l in lines[first + 1 :] if not l.startswith("#include \"/") and not l.startswith("#line ")]
assert kept == expected, f"{spliced} differs from {source} outside the region of {ident}"
PY
    count=$((count + 1))
  done
  # A second start keeps the learner's work.
  first=$EXERCISES_DIR/$chapter/${ids[0]#*.}.cpp
  echo "// my work" >> "$first"
  again=$(bash scripts/exercise.sh start "$chapter" --no-configure)
  [[ $again == *"kept    $first"* ]] || fail "start $chapter again did not say it kept $first"
  grep -q "// my work" "$first" || fail "start $chapter again overwrote $first"
  bash scripts/exercise.sh reset "$chapter" --no-configure > /dev/null
  [[ ! -e $EXERCISES_DIR/$chapter ]] || fail "reset $chapter left $EXERCISES_DIR/$chapter"
  grep -q "// my work" "$EXERCISES_DIR/.old/$chapter/${ids[0]#*.}.cpp" || fail "reset $chapter lost the learner's files"
done

# A selection that names nothing is refused with the list of chapters.
if out=$("$python" scripts/exercises.py sources 99 2>&1); then fail "selection 99 was accepted"; fi
[[ $out == *"no exercise '99'"* ]] || fail "selection 99: unexpected message: $out"

if $in_git; then
  [[ $(tracked_state) == "$before" ]] || fail "the round trip changed tracked files"
fi
echo "round_trip_test: $count exercises: stubs, spliced copies, keep, reset; tracked files unchanged"
