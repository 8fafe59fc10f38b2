#!/usr/bin/env bash
# CI for exercise mode (scripts/exercise.sh): for every exercise of chapters 1-12,
#   1. its stub alone (SCRATCHGRAD_EXERCISES=NN.name) makes the chapter's tests (ctest -L chNN,
#      on the reference kernels) fail, and the failures carry "exercise NN.name: not written yet";
#   2. every exercise at once, its file holding the solution (the marked region, copied out),
#      builds warning-free and passes every chapter's tests: what a learner who got everything
#      right sees.
# One build directory serves every step: each step rebuilds only the spliced source files and
# relinks the test programs, so an existing build (CI passes BUILD_DIR=build, already built)
# costs seconds per exercise; the script then sets it back to SCRATCHGRAD_EXERCISES="" and
# relinks. Without BUILD_DIR, build-exercises/ is configured (Release, -Werror, no examples).
# The learner's exercises/ is never touched (a BUILD_DIR whose exercises/ is the learner's folder,
# or a folder the script did not make, is refused); the stubs go to <build dir>/exercises.
#   bash scripts/check_exercises.sh [NN.name ...]     # all exercises, or only those named
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/env.sh

build_dir=${BUILD_DIR:-build-exercises}
python=${PYTHON:-python3}
exercises_dir=$(realpath -m "$build_dir/exercises")
# The stubs' folder is emptied at every step: never the learner's (BUILD_DIR=. made it exercises/),
# and never a folder this script did not make (it leaves a mark in the ones it makes).
learner_dir=$(realpath -m "${EXERCISES_DIR:-exercises}")
mark=.made-by-check_exercises
if [[ $exercises_dir == "$learner_dir" ]]; then
  echo "check_exercises: BUILD_DIR=$build_dir would put the stubs in $exercises_dir, the learner's" \
    "exercises folder, and empty it at every step; choose another BUILD_DIR" >&2
  exit 2
fi
if [[ -e $exercises_dir && ! -e $exercises_dir/$mark ]]; then
  echo "check_exercises: $exercises_dir exists and was not made by this script; it would empty" \
    "it at every step: move it away or choose another BUILD_DIR" >&2
  exit 2
fi
# A fresh folder of stubs for `start`'s arguments, marked as this script's.
start_stubs() {
  rm -rf "$exercises_dir"
  "$python" scripts/exercises.py start "$@" --dir "$exercises_dir" > /dev/null
  touch "$exercises_dir/$mark"
}
launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)

if [[ $# -gt 0 ]]; then
  ids=("$@")
else
  mapfile -t ids < <("$python" scripts/exercises.py list | awk '{print $1}')
fi

fresh=()
if [[ ! -f $build_dir/CMakeCache.txt ]]; then
  fresh=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DSCRATCHGRAD_WERROR=ON -DSCRATCHGRAD_CUDA=OFF
         -DSCRATCHGRAD_BUILD_EXAMPLES=OFF -DSCRATCHGRAD_BUILD_BENCH=OFF -DSCRATCHGRAD_DISTRIBUTED=OFF
         "${launcher[@]}")
fi

configure() {
  cmake -S . -B "$build_dir" "${fresh[@]}" "-DSCRATCHGRAD_EXERCISES=$1" \
    "-DSCRATCHGRAD_EXERCISES_DIR=$exercises_dir" > "$build_dir/exercises-configure.log" 2>&1 \
    || { cat "$build_dir/exercises-configure.log" >&2; exit 1; }
  fresh=()
}
# Whatever happens, the build directory ends up building the library's own code again.
restore() {
  cmake -S . -B "$build_dir" -DSCRATCHGRAD_EXERCISES= -USCRATCHGRAD_EXERCISES_DIR > /dev/null 2>&1 || true
}
trap restore EXIT

# The chapters' test programs: the two gtest binaries, and the copy task's (chapter 12) where the
# build has the examples.
targets=(autograd_tests nn_tests)
if [[ -x $build_dir/tests/copy_task_tests ]]; then
  targets+=(copy_task_tests copy_task)
fi
build() {
  cmake --build "$build_dir" --parallel "$jobs" --target "${targets[@]}" > "$build_dir/exercises-build.log" 2>&1 \
    || { tail -50 "$build_dir/exercises-build.log" >&2; echo "check_exercises: the build of $1 failed" >&2; exit 1; }
}

# ctest on a chapter's label, output in $log; returns ctest's status. Only the test programs are
# rebuilt, so the chapter's example programs (label "example") are left out.
run_chapter() {
  (cd "$build_dir" && SCRATCHGRAD_KERNELS=reference OPENBLAS_NUM_THREADS=1 \
    ctest -L "^ch($1)\$" -LE example --output-on-failure --parallel "$jobs") > "$log" 2>&1
}

mkdir -p "$build_dir"
log=$(realpath "$build_dir/exercises-ctest.log")
failed=()
start_all=$SECONDS
for id in "${ids[@]}"; do
  chapter=${id%%.*}
  started=$SECONDS
  start_stubs "$id"
  configure "$id"
  build "$id"
  if run_chapter "$chapter"; then
    echo "check_exercises: FAIL $id: ctest -L ch$chapter passes with the stub" >&2
    failed+=("$id")
  elif ! grep -q "exercise $id: not written yet" "$log"; then
    tail -40 "$log" >&2
    echo "check_exercises: FAIL $id: ch$chapter fails, but never with the exercise's message" >&2
    failed+=("$id")
  else
    count=$(grep -cE "^[[:space:]]*[0-9]+ - ch$chapter\." "$log" || true)
    echo "check_exercises: ok   $id: its stub fails $count test(s) of ch$chapter with its message ($((SECONDS - started)) s)"
  fi
done

# Every exercise at once, each file holding the library's own solution.
started=$SECONDS
selection=$(IFS=','; echo "${ids[*]}")
start_stubs "$selection" --solutions
configure "$selection"
build "the solutions"
chapters=$(printf '%s\n' "${ids[@]}" | cut -d. -f1 | sort -u | paste -sd'|')
if run_chapter "$chapters"; then
  echo "check_exercises: ok   the solutions, spliced in as learner files, pass ch$chapters ($(grep -oE '[0-9]+% tests passed.*' "$log" | tail -1); $((SECONDS - started)) s)"
else
  tail -60 "$log" >&2
  echo "check_exercises: FAIL the solutions spliced in as learner files do not pass" >&2
  failed+=("solutions")
fi
rm -rf "$exercises_dir"
restore
build "the library's own code"

if [[ ${#failed[@]} -gt 0 ]]; then
  echo "check_exercises: ${#failed[@]} failed: ${failed[*]}" >&2
  exit 1
fi
echo "check_exercises: all ${#ids[@]} exercises checked in $((SECONDS - start_all)) s"
