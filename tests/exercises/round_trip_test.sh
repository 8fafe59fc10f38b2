#!/usr/bin/env bash
# Exercise mode without a build (seconds): every exercise's markers resolve; for every chapter,
# `exercise.sh start` writes stubs that throw the exercise's message with a hint, the spliced copy
# of each library file differs from the original only by the learner's #include in place of the
# region, a second start keeps the learner's work, `reset` moves the files away, and the
# repository's tracked files are exactly as before (nothing in the library is ever edited).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
python=${PYTHON:-python3}
export PYTHON=$python
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export EXERCISES_DIR=$tmp/exercises

fail() { echo "round_trip_test: $*" >&2; exit 1; }

tracked_state() { git diff HEAD --stat 2>/dev/null; git diff HEAD 2>/dev/null | sha256sum; }
in_git=false
git rev-parse --is-inside-work-tree > /dev/null 2>&1 && in_git=true
$in_git && before=$(tracked_state)

"$python" scripts/exercises.py check-markers

chapters=(01 02 03 04 05 06 07 08 09 10 11 12 13b)
for chapter in "${chapters[@]}"; do
  bash scripts/exercise.sh start "$chapter" --no-configure > /dev/null
done

# Every stub, and every spliced copy, in one Python process.
"$python" - "$EXERCISES_DIR" "$tmp/spliced" <<'PY'
import argparse, pathlib, re, sys
sys.path.insert(0, "scripts")
import exercises as ex

directory, spliced_dir = sys.argv[1:]
for e in ex.EXERCISES:
    learner = ex.learner_file(directory, e)
    text = learner.read_text(encoding="utf-8")
    expected_throw = f'throw sg::Error("exercise {e.id}: not written yet. Hint: '
    assert expected_throw in text, f"{learner} does not throw the exercise's message"
    assert len(e.hint) >= 60, f"{e.id}: the hint is too short to help"
    out = pathlib.Path(spliced_dir) / e.path
    ex.cmd_splice(argparse.Namespace(selection=e.id, file=e.path, out=str(out), dir=directory))
    original = (ex.ROOT / e.path).read_text(encoding="utf-8").splitlines()
    start, end = ex.region(e, original)
    lines = out.read_text(encoding="utf-8").splitlines()
    includes = [l for l in lines if l.startswith('#include "/')]
    assert includes == [f'#include "{learner.resolve()}"'], f"{out}: includes {includes}"
    first = next(i for i, l in enumerate(lines) if l.startswith("#line 1 "))
    kept = [l for l in lines[first + 1 :] if not re.match(r'#(include "/|line )', l)]
    assert kept == original[: start + 1] + original[end:], (
        f"{out} differs from {e.path} outside the region of {e.id}"
    )
print(f"round_trip_test: {len(ex.EXERCISES)} stubs and spliced copies checked")
PY

for chapter in "${chapters[@]}"; do
  written=("$EXERCISES_DIR/$chapter"/*.cpp)
  first=${written[0]}
  [[ -f $first ]] || fail "start $chapter wrote no file"
  # A second start keeps the learner's work; reset moves it to .old/.
  echo "// my work" >> "$first"
  again=$(bash scripts/exercise.sh start "$chapter" --no-configure)
  [[ $again == *"kept    $first"* ]] || fail "start $chapter again did not say it kept $first"
  grep -q "// my work" "$first" || fail "start $chapter again overwrote $first"
  bash scripts/exercise.sh reset "$chapter" --no-configure > /dev/null
  [[ ! -e $EXERCISES_DIR/$chapter ]] || fail "reset $chapter left $EXERCISES_DIR/$chapter"
  grep -q "// my work" "$EXERCISES_DIR/.old/$chapter/$(basename "$first")" \
    || fail "reset $chapter lost the learner's files"
done

# A second round keeps the first round's files: reset never replaces an earlier reset's copy.
saved=("$EXERCISES_DIR/.old/06/"*.cpp)
first=${saved[0]}
bash scripts/exercise.sh start 06 --no-configure > /dev/null
second=$EXERCISES_DIR/06/$(basename "$first")
echo "// my second try" >> "$second"
out=$(bash scripts/exercise.sh reset 06 --no-configure)
[[ $out == *"your files are in $EXERCISES_DIR/.old/06.2"* ]] || fail "second reset said: $out"
grep -q "// my work" "$first" || fail "the second reset replaced the first reset's files"
grep -q "// my second try" "$EXERCISES_DIR/.old/06.2/$(basename "$first")" \
  || fail "the second reset lost the learner's files"

# Bad input: a clear message and a non-zero exit, nothing done.
expect_refusal() {  # expect_refusal "<message part>" args...
  local want=$1 out status=0
  shift
  out=$(bash scripts/exercise.sh "$@" 2>&1) || status=$?
  [[ $status -ne 0 ]] || fail "exercise.sh $* was accepted"
  [[ $out == *"$want"* ]] || fail "exercise.sh $*: expected '$want', got: $out"
  [[ $out != *Traceback* ]] || fail "exercise.sh $*: a Python traceback: $out"
}
expect_refusal "no exercise '99'" reset 99 --no-configure
expect_refusal "no exercise '99'" check 99
expect_refusal "unknown argument '--no-configur'" start 06 --no-configur
expect_refusal "unknown argument '--no-configur'" reset 06 --no-configur
EXERCISES_DIR=/proc/no-such-folder expect_refusal \
  "cannot write /proc/no-such-folder/06/" start 06 --no-configure
# The folder is named in an #include of the spliced library files.
EXERCISES_DIR="$tmp/we\"ird" expect_refusal "which an #include cannot name" start 06 --no-configure

# check_exercises.sh empties its stubs' folder at every step: it refuses the learner's folder as
# that (BUILD_DIR=. made it exercises/, and the learner's files were lost), and any folder it did
# not make. Both refusals come before anything is configured or written.
mkdir -p "$tmp/exercises/01" "$tmp/build/exercises"
echo '// my work' > "$tmp/exercises/01/keep.cpp"
status=0
out=$(BUILD_DIR=$tmp bash scripts/check_exercises.sh 01.transpose 2>&1) || status=$?
[[ $status -eq 2 && $out == *"the learner's exercises folder"* ]] ||
  fail "check_exercises with BUILD_DIR holding the learner's folder: status $status: $out"
[[ $(cat "$tmp/exercises/01/keep.cpp") == "// my work" ]] || fail "the learner's file was touched"
status=0
out=$(BUILD_DIR=$tmp/build bash scripts/check_exercises.sh 01.transpose 2>&1) || status=$?
[[ $status -eq 2 && $out == *"was not made by this script"* ]] ||
  fail "check_exercises over a folder it did not make: status $status: $out"

# A selection that names nothing is refused with the list of chapters.
if out=$("$python" scripts/exercises.py sources 99 2>&1); then fail "selection 99 was accepted"; fi
[[ $out == *"no exercise '99'"* ]] || fail "selection 99: unexpected message: $out"

if $in_git; then
  [[ $(tracked_state) == "$before" ]] || fail "the round trip changed tracked files"
fi
echo "round_trip_test: start, keep, reset for chapters ${chapters[*]}; tracked files unchanged"
