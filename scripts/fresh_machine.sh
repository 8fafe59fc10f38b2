#!/usr/bin/env bash
# The README's quick start on fresh machines: a Debian root made by debootstrap (--variant=minbase:
# the base system and nothing else), a `git archive` of HEAD inside it, and the README's two
# commands run exactly as the README writes them (they are read from its "Quick start" block).
# Run by .ci/run, or by hand, as root on a Debian machine that reaches deb.debian.org:
#   bash scripts/fresh_machine.sh                  # every leg below
#   bash scripts/fresh_machine.sh debian13         # some of them
#   bash scripts/fresh_machine.sh --install-only 4 debian12  # install_deps alone, in 4 fresh roots
#   bash scripts/fresh_machine.sh --worktree ...   # this work tree's files instead of HEAD
#   bash scripts/fresh_machine.sh --keep debian12  # leave the root, for commands run in it:
#   bash scripts/fresh_machine.sh --run-in debian12 learner 'COMMAND'   # in ~/scratchgrad
#   bash scripts/fresh_machine.sh --remove debian12
# Legs:
#   debian12  a user with sudo runs the main job (packages through sudo, build, training), then
#             the test command, as a newcomer would; then, in a second fresh root, root installs
#             the packages (install_deps.sh, the step that differs between root and sudo)
#   debian13  root runs the main job
# Each phase prints its time: packages, build, and training or tests, read from the commands'
# own output. A failure prints the tail of that command's log and fails the script, and so does a
# compiler warning: a newcomer's first build prints none.
# FRESH_MACHINE_DIR (default /var/tmp/scratchgrad-fresh) holds the roots and the logs; a root is
# removed when its leg passes (unless --keep), and kept for a look when it fails.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
work=${FRESH_MACHINE_DIR:-/var/tmp/scratchgrad-fresh}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}

usage="debian12, debian13, --worktree, --keep, --install-only N, --run-in LEG USER COMMAND," \
usage+=" --remove LEG"
source_tree=head
install_only=0
keep=false
action=legs
legs=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --worktree) source_tree=worktree ;;
    --keep) keep=true ;;
    --install-only)
      install_only=${2:-}
      [[ $install_only =~ ^[1-9][0-9]?$ ]] ||
        { echo "fresh_machine: --install-only takes a count of roots (1-99)" >&2; exit 2; }
      shift ;;
    --run-in)
      [[ $# -ge 4 ]] || { echo "fresh_machine: --run-in takes LEG USER COMMAND" >&2; exit 2; }
      action=run-in run_leg=$2 run_user=$3 run_command=$4
      shift 3 ;;
    --remove)
      [[ $# -ge 2 ]] || { echo "fresh_machine: --remove takes LEG" >&2; exit 2; }
      action=remove run_leg=$2
      shift ;;
    debian12 | debian13) legs+=("$1") ;;
    *) echo "fresh_machine: unknown argument '$1' ($usage)" >&2
       exit 2 ;;
  esac
  shift
done
[[ ${#legs[@]} -gt 0 ]] || legs=(debian12 debian13)

[[ $(id -u) -eq 0 ]] || { echo "fresh_machine: debootstrap and chroot need root" >&2; exit 1; }
for tool in debootstrap chroot mount mountpoint git; do
  command -v "$tool" >/dev/null ||
    { echo "fresh_machine: '$tool' is missing (apt-get install debootstrap)" >&2; exit 1; }
done

mkdir -p "$work/logs"
started=$SECONDS
summary=()
say() { echo "==== fresh_machine: $* ($((SECONDS - started)) s in)"; }

# A Debian release's base system, made once per run of this script and unpacked for each root.
base_tarball() {
  local suite=$1 tarball=$work/$1-base.tar
  if [[ ! -f $tarball || -n $(find "$tarball" -mmin +600) ]]; then
    say "debootstrap --variant=minbase $suite" >&2
    local dir=$work/$suite-debootstrap
    remove_root "$dir"
    debootstrap --variant=minbase "$suite" "$dir" "$mirror" >"$work/$suite-debootstrap.log" 2>&1 ||
      { tail -20 "$work/$suite-debootstrap.log" >&2; exit 1; }
    tar -C "$dir" -cf "$tarball.part" . && mv "$tarball.part" "$tarball"
    remove_root "$dir"
  fi
  echo "$tarball"
}

mounted=()
unmount_all() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; i--)); do umount -l "${mounted[i]}" 2>/dev/null || true; done
  mounted=()
}
trap unmount_all EXIT

# remove_root DIR: a root and everything in it, but never what is mounted inside it (a run killed
# before its unmounting leaves the host's /dev and /proc bound there).
remove_root() {
  local dir=$1 mountpoint
  [[ -e $dir ]] || return 0
  while read -r _ mountpoint _; do
    if [[ $mountpoint == "$dir"/* ]]; then umount -l "$mountpoint" 2>/dev/null || true; fi
  done < <(sort -r -k2 /proc/mounts)
  rm -rf --one-file-system "$dir"
}

# mount_root DIR: what a running machine has: proc, sys (hwloc reads the CPUs there), dev with its
# shared memory (Open MPI's transport), the host's DNS settings.
mount_root() {
  local root=$1 fs
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  for fs in proc sys dev dev/pts dev/shm; do
    [[ -d /$fs ]] || continue
    mount --bind "/$fs" "$root/$fs"
    mounted+=("$root/$fs")
  done
}

# new_root SUITE NAME: a fresh root at $work/NAME.
new_root() {
  local tarball root=$work/$2
  tarball=$(base_tarball "$1")
  remove_root "$root"
  mkdir -p "$root"
  tar -C "$root" -xf "$tarball"
  mount_root "$root"
}

# put_source ROOT USER: the project's files in USER's ~/scratchgrad inside ROOT, as a fresh clone
# has them.
put_source() {
  local root=$1 user=$2 entry home
  entry=$(chroot "$root" getent passwd "$user")
  home=$(cut -d: -f6 <<<"$entry")
  mkdir -p "$root$home/scratchgrad"
  if [[ $source_tree == head ]]; then
    git archive --format=tar HEAD | tar -x -C "$root$home/scratchgrad"
  else
    git ls-files -z --cached --others --exclude-standard | tar -c --null -T - -f - |
      tar -x -C "$root$home/scratchgrad"
  fi
  chroot "$root" chown -R "$user:" "$home/scratchgrad"
}

# run_in ROOT USER LOG COMMAND: COMMAND in a login shell of USER inside ROOT, in ~/scratchgrad,
# its output timestamped (seconds since its start) into LOG. Fails with the log's tail.
run_in() {
  local root=$1 user=$2 log=$3 command=$4 status=0
  local start=$SECONDS line
  # A login shell: the machine's own environment, none of this one's.
  chroot "$root" su - "$user" -c "cd scratchgrad && $command" </dev/null 2>&1 |
    while IFS= read -r line; do printf '%5d %s\n' $((SECONDS - start)) "$line"; done >"$log" ||
    status=$?
  if [[ $status -ne 0 ]]; then
    echo "fresh_machine: '$command' as $user failed (exit $status); the end of $log:" >&2
    tail -60 "$log" >&2
    exit 1
  fi
}

# phases LOG KIND: the phases of one command's timestamped log. Packages end at install_deps'
# last line, the build at ninja's last progress line ("[N/M] ..."); the rest is training or tests.
phases() {
  local log=$1 kind=$2 packages build total
  packages=$(awk '$2 == "install_deps:" { t = $1 } END { print t + 0 }' "$log")
  build=$(awk '$2 ~ /^\[[0-9]+\/[0-9]+\]$/ { t = $1 } END { print t + 0 }' "$log")
  total=$(awk 'END { print $1 + 0 }' "$log")
  [[ $build -ge $packages ]] || build=$packages
  printf 'packages %d s, build %d s, %s %d s (total %d s)' "$packages" $((build - packages)) \
    "$kind" $((total - build)) "$total"
}

# step ROOT USER NAME KIND COMMAND: one README command, with its phases in the summary.
step() {
  local root=$1 user=$2 name=$3 kind=$4 command=$5 log warnings
  log=$work/logs/${name// /-}.log
  say "$name: $command (as $user)"
  run_in "$root" "$user" "$log" "$command"
  # A compiler's warnings name a place, file:line[:column] (apt's own "warning:" lines do not).
  warnings=$(grep -E ':[0-9]+(:[0-9]+)?: warning: ' "$log" || true)
  if [[ -n $warnings ]]; then
    echo "fresh_machine: '$command' built with compiler warnings ($log):" >&2
    head -20 <<<"$warnings" >&2
    exit 1
  fi
  summary+=("$name: $(phases "$log" "$kind")")
  echo "${summary[-1]}"
}

leg_debian12() {
  local root=$work/debian12
  new_root bookworm debian12
  # A user with sudo, as the README promises: sudo is the machine owner's, not scratchgrad's.
  chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
  chroot "$root" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q sudo >/dev/null
  chroot "$root" useradd --create-home --shell /bin/bash learner
  echo 'learner ALL=(ALL) NOPASSWD: ALL' >"$root/etc/sudoers.d/learner"
  chmod 0440 "$root/etc/sudoers.d/learner"
  # An apt that was never updated, as on a new machine.
  rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin
  put_source "$root" learner
  step "$root" learner "debian12 user main job" training "$main_job"
  step "$root" learner "debian12 user tests" tests "$test_command"
  unmount_all
  $keep || remove_root "$root"
  install_only_roots debian12 1
}

leg_debian13() {
  local root=$work/debian13
  new_root trixie debian13
  put_source "$root" root
  step "$root" root "debian13 root main job" training "$main_job"
  unmount_all
  $keep || remove_root "$root"
}

# install_only_roots LEG N: install_deps alone in N fresh roots of the leg's release, as root.
install_only_roots() {
  local leg=$1 count=$2 suite=bookworm i
  [[ $leg == debian13 ]] && suite=trixie
  for ((i = 1; i <= count; i++)); do
    local root=$work/$leg-install-$i
    new_root "$suite" "$leg-install-$i"
    put_source "$root" root
    step "$root" root "$leg root install_deps, root $i of $count" rest \
      "bash scripts/install_deps.sh"
    unmount_all
    remove_root "$root"
  done
}

# --run-in LEG USER COMMAND: a command in a root a --keep run left, its output shown as it comes.
run_in_kept_root() {
  local root=$work/$run_leg status=0
  [[ -x $root/usr/bin/apt-get ]] ||
    { echo "fresh_machine: no root for $run_leg (run with --keep $run_leg first)" >&2; exit 1; }
  mount_root "$root"
  chroot "$root" su - "$run_user" -c "cd scratchgrad && $run_command" </dev/null || status=$?
  unmount_all
  [[ $status -eq 0 ]] ||
    { echo "fresh_machine: '$run_command' as $run_user in $run_leg failed (exit $status)" >&2; exit 1; }
}

case $action in
  run-in) run_in_kept_root; exit ;;
  remove) remove_root "$work/$run_leg"; exit ;;
esac

# The two commands of the README's quick start, comments stripped: what a newcomer types.
readarray -t readme_commands < <(awk '/^## Quick start/ { section = 1; next }
  section && /^## / { exit }
  section && /^```/ { inside = !inside; next }
  section && inside && /^bash / { sub(/ +#.*/, ""); print }' README.md)
if [[ ${#readme_commands[@]} -ne 2 || ${readme_commands[0]} != *copy_task.sh* ||
      ${readme_commands[1]} != *test.sh* ]]; then
  echo "fresh_machine: expected the README's quick start to hold two commands, the main job" \
    "(copy_task.sh) and the tests (test.sh); found: ${readme_commands[*]:-none}" >&2
  exit 1
fi
main_job=${readme_commands[0]}
test_command=${readme_commands[1]}

for leg in "${legs[@]}"; do
  if [[ $install_only -gt 0 ]]; then
    install_only_roots "$leg" "$install_only"
  else
    "leg_$leg"
  fi
done
say "passed (${legs[*]}; source: $source_tree $(git rev-parse --short HEAD))"
printf '  %s\n' "${summary[@]}"
exit
