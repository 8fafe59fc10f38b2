# The programs' command-line tests (tests/*/cli_test.sh) source this: each check runs $bin with
# arguments and counts a pass or prints why it failed. The caller sets bin (the program); dir is a
# temporary folder for the output, removed at exit.
#   expect_error "<substring of stderr>" args...   a clean error: a non-zero status that is not a
#                                                  signal, the substring on standard error, and no
#                                                  sign of a crash
#   expect_ok "<substring of stdout>" args...      status 0 and the substring on standard output
#                                                  (standard input from $input when it is set)
#   cli_summary                                    the counts; its status is the test's
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failures=0
passes=0

expect_error() {
  local want=$1; shift
  timeout 300 "$bin" "$@" >"$dir/out" 2>"$dir/err" </dev/null
  local status=$?
  if [[ $status -eq 0 || $status -ge 128 ]]; then
    echo "FAIL: '$*' exited with $status (want a clean error)"; failures=$((failures + 1)); return
  fi
  if ! grep -qF -- "$want" "$dir/err"; then
    echo "FAIL: '$*' stderr lacks '$want':"; cat "$dir/err"; failures=$((failures + 1)); return
  fi
  if grep -q "terminate called\|Aborted\|Segmentation" "$dir/err"; then
    echo "FAIL: '$*' crashed"; failures=$((failures + 1)); return
  fi
  passes=$((passes + 1))
}

expect_ok() {
  local want=$1; shift
  if ! timeout 300 "$bin" "$@" >"$dir/out" 2>"$dir/err" <"${input:-/dev/null}"; then
    echo "FAIL: '$*' failed:"; cat "$dir/err"; failures=$((failures + 1)); return
  fi
  if ! grep -qF -- "$want" "$dir/out"; then
    echo "FAIL: '$*' output lacks '$want':"; cat "$dir/out"; failures=$((failures + 1)); return
  fi
  passes=$((passes + 1))
}

cli_summary() {
  echo "cli_test: $passes passed, $failures failed"
  [[ $failures -eq 0 ]]
}
