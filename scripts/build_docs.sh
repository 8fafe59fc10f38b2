#!/usr/bin/env bash
# Builds the tutorial site into site/ (open site/index.html: it works offline, no server needed):
#   bash scripts/build_docs.sh
# Debian 12 packages only: mkdocs, mkdocs-material, python3-pymdownx, and libjs-katex (copied into
# the site, so formulas render without a network). Missing ones are installed with apt-get, as
# scripts/install_deps.sh does for the build. The chapters' code and output blocks are pulled from
# the sources and from docs/outputs (scripts/docs_snippets.py); regenerate the outputs with
# scripts/docs_outputs.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

packages=(mkdocs mkdocs-material python3-pymdownx libjs-katex fonts-katex)
missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null) || status=
  if [[ $status != *"install ok installed"* ]]; then
    missing+=("$package")
  fi
done
if [[ ${#missing[@]} -gt 0 ]]; then
  as_root=()
  if [[ $(id -u) -ne 0 ]]; then
    if ! command -v sudo >/dev/null; then
      echo "build_docs: missing packages (${missing[*]}); run as root or install sudo" >&2
      exit 1
    fi
    as_root=(sudo)
  fi
  echo "build_docs: installing ${missing[*]}"
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
fi

# Debian's python3 (the pyenv one on PATH, if any, lacks the Debian modules).
/usr/bin/python3 -m mkdocs build --strict --clean --config-file mkdocs.yml --site-dir site
echo "build_docs: open site/index.html"
