#!/usr/bin/env bash
# scripts/check_early_readers.py: the project's scripts pass it, and it finds each kind of reader
# that can stop early, and none of the safe forms, in two scripts written to hold them
# (tests/scripts/early_readers/, named .txt so that the check of the project leaves them out).
set -euo pipefail
python=${PYTHON:-python3}

"$python" scripts/check_early_readers.py

status=0
found=$("$python" scripts/check_early_readers.py tests/scripts/early_readers/bad.txt 2>/dev/null) || status=$?
count=$(grep -c 'early-closing reader' <<<"$found" || true)
if [[ $status -ne 1 || $count -ne 11 ]]; then
  echo "FAIL: expected 11 findings in bad.txt and exit 1, got $count (exit $status):"
  echo "$found"
  exit 1
fi
if ! "$python" scripts/check_early_readers.py tests/scripts/early_readers/good.txt; then
  echo "FAIL: a safe form was reported"
  exit 1
fi
echo "early_readers_test: the scripts pass; 11 early readers found, no safe form reported"
