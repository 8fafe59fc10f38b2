#!/usr/bin/env bash
# scripts/install_deps.sh against a fake apt: apt-cache, apt-get, dpkg, dpkg-query, id and sudo are
# small scripts on a PATH of their own, driven by FAKE_* variables, and each query pads its answer
# with a megabyte of lines after the part that matters. A check that stops reading at its match
# (`apt-cache policy NAME | grep -q Candidate` under pipefail) kills the query with SIGPIPE and
# reads its "yes" as "no", every time: what made the t64 names fail on fresh Debian 12 machines,
# there only now and then.
#   bash tests/scripts/install_deps_test.sh [SCRIPT]   # SCRIPT: install_deps.sh to test
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
script=${1:-$here/../../scripts/install_deps.sh}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fakes=$dir/bin
mkdir -p "$fakes"

# pad: a megabyte of output after the answer, written in one go.
padding='pad() { printf "%1048576s\n" " "; }'
cat >"$fakes/apt-cache" <<EOF
#!/bin/bash
$padding
[[ \$1 == policy ]] || exit 2
echo "\$2:"
echo "  Installed: (none)"
if [[ " \$FAKE_CANDIDATES " == *" \$2 "* ]]; then echo "  Candidate: 1.0-1"; else echo "  Candidate: (none)"; fi
pad
EOF
cat >"$fakes/dpkg-query" <<EOF
#!/bin/bash
$padding
name=\${!#}
if [[ " \$FAKE_INSTALLED " == *" \$name "* ]]; then echo 'install ok installed'; else exit 1; fi
pad
EOF
cat >"$fakes/dpkg" <<EOF
#!/bin/bash
$padding
case \$1 in
  --print-foreign-architectures) for a in \$FAKE_ARCHITECTURES; do echo "\$a"; done; pad ;;
  --add-architecture) echo "dpkg \$*" >>"\$FAKE_LOG" ;;
esac
EOF
cat >"$fakes/apt-get" <<'EOF'
#!/bin/bash
echo "apt-get $*" >>"$FAKE_LOG"
EOF
cat >"$fakes/id" <<'EOF'
#!/bin/bash
echo "${FAKE_UID:-0}"
EOF
cat >"$fakes/sudo.real" <<'EOF'
#!/bin/bash
echo "sudo" >>"$FAKE_LOG"
exec "$@"
EOF
chmod +x "$fakes"/*
# The real tools install_deps.sh uses besides the package manager; nothing else is on PATH (a real
# sudo must not be found when the test says there is none). Linked after the chmod, which would
# follow the links to the system's files.
for tool in env uname grep; do ln -s "$(command -v "$tool")" "$fakes/$tool"; done

# Every package install_deps.sh asks for on Debian, under the names Debian 12 has.
debian12=(build-essential cmake ninja-build libopenblas-dev libblis-dev libblis4-pthread
  libtcmalloc-minimal4 libfmt-dev libgtest-dev libbenchmark-dev libcli11-dev nlohmann-json3-dev
  libopenmpi-dev openmpi-bin clang-format)
all_but() {  # the Debian 12 names without the given ones
  local name out=()
  for name in "${debian12[@]}"; do [[ " $* " == *" $name "* ]] || out+=("$name"); done
  echo "${out[*]}"
}

passes=0
failures=0
fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
# run NAME ARGS...: install_deps.sh with the fakes; sets status, out, err, log.
run() {
  : >"$dir/log"
  status=0
  PATH=$fakes FAKE_LOG=$dir/log "$BASH" "$script" "$@" >"$dir/out" 2>"$dir/err" || status=$?
  out=$(<"$dir/out") err=$(<"$dir/err") log=$(<"$dir/log")
}
expect() {  # expect NAME CONDITION...: the condition holds, else the run's output is shown
  local name=$1
  shift
  if "$@"; then
    passes=$((passes + 1))
  else
    fail "$name (status $status)"
    printf '  stdout: %s\n  stderr: %s\n  apt log: %s\n' "$out" "$err" "$log"
  fi
}
has() { [[ $1 == *"$2"* ]]; }
has_line() { grep -qxF -- "$2" <<<"$1"; }
lacks() { [[ $1 != *"$2"* ]]; }

# Debian 12: the t64 name has no candidate, the old one has; cmake is missing too.
export FAKE_INSTALLED="$(all_but libtcmalloc-minimal4 cmake)"
export FAKE_CANDIDATES="libtcmalloc-minimal4 cmake" FAKE_ARCHITECTURES=""
run
expect "Debian 12 installs the old tcmalloc name" has_line "$log" \
  "apt-get install -y -q --no-install-recommends cmake libtcmalloc-minimal4"
expect "Debian 12 updates apt's lists first" has "${log%%$'\n'*}" "apt-get update"
expect "Debian 12 exits 0" test "$status" -eq 0
expect "Debian 12 says what it installed" has "$out" "installed 2 packages"

# Debian 13: only the t64 name has a candidate.
export FAKE_CANDIDATES="libtcmalloc-minimal4t64 cmake"
run
expect "Debian 13 installs the t64 name" has_line "$log" \
  "apt-get install -y -q --no-install-recommends cmake libtcmalloc-minimal4t64"

# Both names have candidates: the first one listed wins.
export FAKE_CANDIDATES="libtcmalloc-minimal4 libtcmalloc-minimal4t64 cmake"
run
expect "the first name with a candidate wins" has_line "$log" \
  "apt-get install -y -q --no-install-recommends cmake libtcmalloc-minimal4t64"

# Everything installed, tcmalloc under its old name: nothing to do, apt untouched.
export FAKE_INSTALLED="${debian12[*]}"
run
expect "all installed: says so" has "$out" "install_deps: all ${#debian12[@]} packages are installed"
expect "all installed: apt untouched" test -z "$log"
export FAKE_INSTALLED="$(all_but libtcmalloc-minimal4) libtcmalloc-minimal4t64"
run
expect "all installed under the t64 name" has "$out" "packages are installed"

# A package without a candidate: refused by name, with what to do, and nothing installed.
export FAKE_INSTALLED="$(all_but libcli11-dev libtcmalloc-minimal4)" FAKE_CANDIDATES="libtcmalloc-minimal4"
run
expect "no candidate: fails" test "$status" -eq 1
expect "no candidate: names the package" has "$err" "no installation candidate for: libcli11-dev"
expect "no candidate: says what to do" has "$err" "SCRATCHGRAD_SKIP_DEPS=1"
expect "no candidate: installs nothing" lacks "$log" "apt-get install"
export FAKE_INSTALLED="$(all_but libtcmalloc-minimal4)" FAKE_CANDIDATES=""
run
expect "neither tcmalloc name: names both" has "$err" \
  "libtcmalloc-minimal4t64 or libtcmalloc-minimal4"

# Not root: through sudo where there is one; a clear refusal where there is none.
export FAKE_INSTALLED="$(all_but cmake)" FAKE_CANDIDATES="cmake" FAKE_UID=1000
run
expect "no sudo: fails" test "$status" -eq 1
expect "no sudo: names the package and the way out" has "$err" \
  "missing packages (cmake) and no sudo to install them: run this as root"
mv "$fakes/sudo.real" "$fakes/sudo"
run
expect "with sudo: apt-get through sudo" has "$log" $'sudo\napt-get update'
expect "with sudo: installs" has "$log" "--no-install-recommends cmake"
mv "$fakes/sudo" "$fakes/sudo.real"
export FAKE_UID=0

# --platforms: arm64 added once, only where dpkg does not list it yet.
platform_packages=(libc++-16-dev libc++abi-16-dev libomp-16-dev libclang-rt-16-dev valgrind qemu-user
  crossbuild-essential-arm64 libopenblas-dev:arm64 libfmt-dev:arm64 libgtest-dev:arm64 debootstrap)
export FAKE_INSTALLED="$(all_but) ${platform_packages[*]}"
export FAKE_CANDIDATES="clang-16 libtcmalloc-minimal4:arm64"
run --platforms
expect "--platforms adds arm64" has "$log" "dpkg --add-architecture arm64"
export FAKE_ARCHITECTURES="i386 arm64"
run --platforms
expect "--platforms: arm64 already there" lacks "$log" "--add-architecture"
expect "--platforms: the old arm64 tcmalloc name" has_line "$log" \
  "apt-get install -y -q --no-install-recommends clang-16 libtcmalloc-minimal4:arm64"

# Bad arguments and unknown systems.
run --gold
expect "unknown argument: names it" has "$err" "unknown argument '--gold'"
expect "unknown argument: exit 2" test "$status" -eq 2
rm "$fakes/apt-get"
run
expect "no apt, no Homebrew: fails" test "$status" -eq 1
expect "no apt, no Homebrew: lists what to install" has "$err" "CMake >= 3.25, Ninja, OpenBLAS"
expect "no apt, no Homebrew: says how to go on" has "$err" "SCRATCHGRAD_SKIP_DEPS=1"
run
SCRATCHGRAD_SKIP_DEPS=1 PATH=$fakes "$BASH" "$script" >"$dir/out" 2>&1 && status=0 || status=$?
out=$(<"$dir/out")
expect "SCRATCHGRAD_SKIP_DEPS=1 skips" has "$out" "nothing installed"

echo "$passes passed, $failures failed"
[[ $failures -eq 0 ]]
