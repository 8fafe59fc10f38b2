#!/usr/bin/env bash
# output_has_line.sh REGEX PROGRAM [ARG...]: runs PROGRAM, shows its output, and passes when it
# exits 0 and a line of its output matches the extended regular expression REGEX. The output is
# read whole before it is matched: a `PROGRAM | grep -q` would close the pipe at its match and
# could kill PROGRAM with SIGPIPE.
set -uo pipefail
regex=$1
shift
output=$("$@")
status=$?
printf '%s\n' "$output"
if [[ $status -ne 0 ]]; then
  echo "output_has_line: $1 exited with status $status" >&2
  exit 1
fi
if ! grep -qE -- "$regex" <<<"$output"; then
  echo "output_has_line: no line of $1's output matches '$regex'" >&2
  exit 1
fi
