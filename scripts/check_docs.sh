#!/usr/bin/env bash
# Builds the tutorial site and checks it in a real browser:
#   bash scripts/check_docs.sh                    # build site/, then check every page
#   bash scripts/check_docs.sh --screenshots DIR  # also save a PNG of every page into DIR
# 1. no control character in the sources and no formula broken by a lost \n (an escape such as
#    the \f of \frac or the \n of \ne eaten by a string: scripts/check_docs_text.py),
# 2. every code snippet resolves (scripts/docs_snippets.py --check),
# 3. the site builds with mkdocs --strict (scripts/build_docs.sh),
# 4. every page opens in headless Chromium from file:// with no broken link, anchor or image, no
#    console error, nothing loaded from the network, and every formula rendered by KaTeX with no
#    KaTeX error (scripts/check_site.py).
# Needs Debian's chromium (installed here if missing). It does not rerun the examples: that is
# `bash scripts/docs_outputs.sh --check` (or `ctest -L docs`).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

/usr/bin/python3 scripts/check_docs_text.py
/usr/bin/python3 scripts/docs_snippets.py --check
bash scripts/build_docs.sh
if ! command -v chromium >/dev/null; then
  as_root=()
  [[ $(id -u) -ne 0 ]] && as_root=(sudo)
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q
  "${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -q --no-install-recommends chromium </dev/null
fi
/usr/bin/python3 scripts/check_site.py site "$@"
