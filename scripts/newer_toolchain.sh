#!/usr/bin/env bash
# The README's test command on a newer distribution: Debian 13 "trixie" (GCC 14, CMake 3.31,
# OpenBLAS 0.3.29 -- what Debian 13 and Ubuntu 24.04 users have), in a chroot made by debootstrap,
# as root on a Debian machine with network access to deb.debian.org:
#   bash scripts/newer_toolchain.sh [DIR]     # DIR: the chroot, /var/tmp/scratchgrad-trixie
# It copies this work tree into DIR/src, runs scripts/install_deps.sh twice (the second run must
# install nothing), then `bash scripts/test.sh -DSCRATCHGRAD_WERROR=ON` there (the CUDA backend is
# left out: the chroot has no CUDA toolkit). A later run reuses the chroot. docs/design.md,
# "Platforms", has the last result; it is not part of .ci/run (it downloads ~500 MB).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
root=${1:-/var/tmp/scratchgrad-trixie}

for tool in debootstrap chroot mount; do
  command -v "$tool" >/dev/null || { echo "newer_toolchain: '$tool' is missing" >&2; exit 1; }
done
[[ $(id -u) -eq 0 ]] || { echo "newer_toolchain: debootstrap and chroot need root" >&2; exit 1; }

if [[ ! -x $root/usr/bin/apt-get ]]; then
  echo "newer_toolchain: debootstrap Debian 13 into $root"
  debootstrap --variant=minbase --include=ca-certificates trixie "$root" http://deb.debian.org/debian
fi
cp /etc/resolv.conf "$root/etc/resolv.conf"
# sys: hwloc (Open MPI's topology) reads the CPUs from /sys.
for fs in proc sys dev dev/pts; do
  mountpoint -q "$root/$fs" || mount --bind "/$fs" "$root/$fs"
done
trap 'for fs in dev/pts dev sys proc; do umount "$root/$fs" 2>/dev/null || true; done' EXIT

# The tracked and new files of this work tree, not its build folders.
rm -rf "$root/src" && mkdir -p "$root/src"
git ls-files -z --cached --others --exclude-standard | tar -c --null -T - -f - | tar -x -C "$root/src"

chroot "$root" bash -c '
  set -euo pipefail
  cd /src
  bash scripts/install_deps.sh
  second=$(bash scripts/install_deps.sh)
  echo "$second"
  [[ $second == "install_deps: all "*" packages are installed" ]] ||
    { echo "newer_toolchain: install_deps.sh is not idempotent here" >&2; exit 1; }
  version=$(g++ --version)
  echo "${version%%$'\n'*}"
  BUILD_DIR=build bash scripts/test.sh -DSCRATCHGRAD_WERROR=ON -DSCRATCHGRAD_CUDA=OFF
'
echo "newer_toolchain: Debian 13 passed"
