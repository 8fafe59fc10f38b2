#!/usr/bin/env bash
# Exercise mode: write, yourself, the functions a chapter teaches (docs/NN-*.md, "Exercises").
#   bash scripts/exercise.sh list [NN]        # the exercises (of chapter NN) and their files
#   bash scripts/exercise.sh start NN         # stubs in exercises/NN/, the build uses them
#   bash scripts/exercise.sh start NN.name    # one exercise only (e.g. 06.softmax_backward)
#   bash scripts/exercise.sh check NN         # build, then run chapter NN's tests (ctest -L chNN)
#   bash scripts/exercise.sh reset NN         # back to the library's solutions (exercises/NN is
#                                             # moved to exercises/.old/NN, or NN.2, NN.3, ...)
# Each stub throws an sg::Error "exercise NN.name: not written yet. Hint: ...", so the chapter's
# tests fail with that message until the function is right. The library's sources are never
# edited: the CMake option SCRATCHGRAD_EXERCISES=NN compiles copies of them whose exercise regions
# are your files (cmake/ScratchgradExercises.cmake, scripts/exercises.py). The tests then run on
# the reference CPU kernels, the code the exercises replace.
# Environment: BUILD_DIR (default build), EXERCISES_DIR (default exercises/).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

build_dir=${BUILD_DIR:-build}
exercises_dir=$(realpath -m "${EXERCISES_DIR:-exercises}")
python=${PYTHON:-python3}
catalogue=(scripts/exercises.py)

usage() {
  sed -n '2,9p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

# The chapter of a selection ("06", "06.softmax_backward", "13b").
chapter_of() {
  local item=${1%%.*}
  [[ $item =~ ^([0-9]+)([a-z]?)$ ]] || {
    echo "exercise.sh: expected a chapter number (06, 13b), got '$1'" >&2
    exit 2
  }
  printf '%02d%s' "$((10#${BASH_REMATCH[1]}))" "${BASH_REMATCH[2]}"
}

# The SCRATCHGRAD_EXERCISES value the build directory holds now (empty when none).
current_selection() {
  [[ -f $build_dir/CMakeCache.txt ]] || return 0
  sed -n 's/^SCRATCHGRAD_EXERCISES:STRING=//p' "$build_dir/CMakeCache.txt"
}

configure() {
  local selection=$1
  local args=(-S . -B "$build_dir" "-DSCRATCHGRAD_EXERCISES=$selection"
              "-DSCRATCHGRAD_EXERCISES_DIR=$exercises_dir")
  if [[ ! -f $build_dir/CMakeCache.txt ]]; then
    args+=(-DCMAKE_BUILD_TYPE=Release)
    command -v ninja > /dev/null && args+=(-G Ninja)
  fi
  mkdir -p "$build_dir"
  cmake "${args[@]}" > "$build_dir/exercise-configure.log" 2>&1 || {
    cat "$build_dir/exercise-configure.log" >&2
    echo "exercise.sh: cmake failed (log above)" >&2
    exit 1
  }
  echo "exercise.sh: $build_dir now builds with SCRATCHGRAD_EXERCISES='$selection'"
}

# `selection` plus `item`, or minus every item of chapter `drop`, as a ','-separated list.
merge_selection() {
  local selection=$1 add=$2 drop=$3 item out=()
  IFS=',' read -r -a items <<< "$selection"
  for item in "${items[@]}" $add; do
    [[ -z $item ]] && continue
    [[ -n $drop && $(chapter_of "$item") == "$drop" ]] && continue
    [[ " ${out[*]} " == *" $item "* ]] || out+=("$item")
  done
  local IFS=','
  echo "${out[*]}"
}

# The options a command takes after its chapter: anything else (a typo of --no-configure) is
# refused rather than ignored.
only_options() {
  local allowed=$1 arg
  shift
  for arg in "$@"; do
    [[ " $allowed " == *" $arg "* ]] || {
      echo "exercise.sh $command: unknown argument '$arg' (expected: ${allowed:-none})" >&2
      exit 2
    }
  done
}

# A chapter that has exercises (exercises.py names the chapters that do, otherwise).
known_chapter() {
  "$python" "${catalogue[@]}" sources "$1" > /dev/null
}

# Where reset keeps the learner's files: exercises/.old/NN, or .old/NN.2, .old/NN.3, ... when an
# earlier reset's files are there (they are never replaced).
old_copy_of() {
  local chapter=$1 n=2 path="$exercises_dir/.old/$1"
  while [[ -e $path ]]; do
    path="$exercises_dir/.old/$chapter.$n"
    n=$((n + 1))
  done
  echo "$path"
}

command=${1:-}
[[ -n $command ]] || usage
shift
case $command in
  list)
    [[ $# -le 1 ]] || only_options "" "${@:2}"
    "$python" "${catalogue[@]}" list "$@"
    ;;
  start)
    [[ $# -ge 1 ]] || usage
    selection=$1
    chapter=$(chapter_of "$selection")
    only_options "--no-configure" "${@:2}"
    "$python" "${catalogue[@]}" start "$selection" --dir "$exercises_dir"
    if [[ ${2:-} != --no-configure ]]; then
      configure "$(merge_selection "$(current_selection)" "$selection" "")"
    fi
    echo "Fill the files in $exercises_dir/$chapter/, then: bash scripts/exercise.sh check $chapter"
    ;;
  check)
    [[ $# -ge 1 ]] || usage
    chapter=$(chapter_of "$1")
    only_options "" "${@:2}"
    known_chapter "$chapter"
    cmake --build "$build_dir" --parallel "${JOBS:-$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)}"
    log=$(mktemp)
    trap 'rm -f "$log"' EXIT
    status=0
    (cd "$build_dir" && SCRATCHGRAD_KERNELS=reference OPENBLAS_NUM_THREADS=1 \
      ctest -L "^ch$chapter\$" --output-on-failure --parallel "${JOBS:-$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)}") 2>&1 | tee "$log" \
      || status=$?
    stubs=$(grep -o "exercise $chapter\.[a-z_0-9]*: not written yet" "$log" | sort -u | cut -d: -f1 || true)
    if [[ -n $stubs ]]; then
      echo
      echo "exercise.sh: still to write: $(echo "$stubs" | sed 's/^exercise //' | tr '\n' ' ')"
    elif [[ $status -eq 0 ]]; then
      echo
      echo "exercise.sh: every test of chapter $chapter passes"
    fi
    exit "$status"
    ;;
  reset)
    [[ $# -ge 1 ]] || usage
    chapter=$(chapter_of "$1")
    only_options "--no-configure" "${@:2}"
    known_chapter "$chapter"
    if [[ -d $exercises_dir/$chapter ]]; then
      mkdir -p "$exercises_dir/.old"
      kept=$(old_copy_of "$chapter")
      mv "$exercises_dir/$chapter" "$kept"
      echo "exercise.sh: your files are in $kept"
    fi
    if [[ -f $build_dir/CMakeCache.txt && ${2:-} != --no-configure ]]; then
      configure "$(merge_selection "$(current_selection)" "" "$chapter")"
    fi
    ;;
  *)
    usage
    ;;
esac
