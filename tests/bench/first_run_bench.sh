#!/usr/bin/env bash
# The first run as a new user meets it: a fresh Debian 12 (debootstrap's minbase, with the
# sources a Debian 12 machine has) in a folder, this repository's HEAD cloned into it,
# `scripts/run` there, then the start curl it prints and the first merged flamegraph. Prints
# where the time goes: installing the packages, building, starting, profiling (the curl asks
# for 30 s).
#
# Needs root, debootstrap and a Debian mirror (DEBIAN_MIRROR, deb.debian.org by default); takes
# about ten minutes and 2 GiB in a temporary folder, removed at the end. Not part of .ci/run: it
# downloads a Debian system.
set -euo pipefail
cd "$(dirname "$0")/../.."
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
if [[ $(id -u) -ne 0 ]] || ! command -v debootstrap >/dev/null; then
  echo "first_run_bench: needs root and debootstrap (apt-get install debootstrap)" >&2
  exit 1
fi

work=$(mktemp -d /tmp/dormant-first-run.XXXXXX)
root=$work/root
run_pid=
cleanup() {
  if [[ -n $run_pid ]]; then
    # TERM: a job a script starts in the background ignores INT.
    kill -TERM "$run_pid" 2>/dev/null || true
    wait "$run_pid" 2>/dev/null || true
  fi
  umount -R "$root/proc" "$root/sys" "$root/dev" 2>/dev/null || true
  # Only once nothing is mounted below it, so that the host's /dev and /sys are never touched.
  if ! grep -q " $root/" /proc/mounts; then rm -rf "$work"; fi
}
trap cleanup EXIT

now_ms() { echo $(($(date +%s%N) / 1000000)); }
ms_since() { echo $(($(now_ms) - $1)); }

started=$(now_ms)
debootstrap --variant=minbase bookworm "$root" "$mirror" >"$work/debootstrap.log" 2>&1
cat >"$root/etc/apt/sources.list" <<EOF
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb http://deb.debian.org/debian-security bookworm-security main
EOF
cp /etc/resolv.conf "$root/etc/resolv.conf"
# What the installer writes and debootstrap does not.
printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' >"$root/etc/hosts"
git clone -q . "$root/root/dormant"
for fs in proc sys dev; do
  mount --rbind "/$fs" "$root/$fs"
  mount --make-rslave "$root/$fs"
done
echo "a fresh Debian 12 in $(($(ms_since "$started") / 1000)) s (not counted)"

log=$work/run.log
begin=$(now_ms)
# scripts/run's defaults, whatever this shell's environment says.
env -u DORMANT_PORT -u DORMANT_SERVICE -u DORMANT_RUN_DIR -u DORMANT_OUTPUT_DIR -u DORMANT_BUILD_DIR \
  chroot "$root" /bin/bash -c 'cd /root/dormant && exec scripts/run' >"$log" 2>&1 &
run_pid=$!

give_up() {
  echo "first_run_bench: $*; scripts/run's output ends:" >&2
  tail -n 30 "$log" >&2
  exit 1
}
# The time at which `pattern` first shows in the log, within 30 minutes.
wait_for() {
  local pattern=$1
  until grep -q "$pattern" "$log"; do
    kill -0 "$run_pid" 2>/dev/null || give_up "scripts/run stopped before '$pattern'"
    (($(ms_since "$begin") < 1800000)) || give_up "no '$pattern' after 30 minutes"
    sleep 0.2
  done
  ms_since "$begin"
}
installed=$(wait_for "^Building Dormant")
running=$(wait_for "^Dormant is running")

state=$root/root/dormant/run
token=$(head -n 1 "$state/operator-token")
url=https://localhost:${DORMANT_PORT:-8443}
ask() { curl -sf --cacert "$state/certs/ca.pem" -H "Authorization: Bearer $token" "$@"; }
start=$(grep -o "'{\"service_name\":\"demo\",\"request_type\":\"start\"[^']*'" "$log" | tr -d "'")
ask -d "$start" "$url/api/metrics/profile_request" >/dev/null
asked=$(ms_since "$begin")
until [[ $(ask "$url/api/profiles") == *'"gpid"'* ]]; do
  kill -0 "$run_pid" 2>/dev/null || give_up "scripts/run stopped before the first profile"
  (($(ms_since "$begin") - asked < 300000)) || give_up "no profile 5 minutes after a 30 s start"
  sleep 0.5
done
profiled=$(ms_since "$begin")
ask -o "$work/service.svg" "$url/api/flamegraph?service=demo"
drawn=$(ms_since "$begin")
grep -q "<svg" "$work/service.svg" || give_up "the merged flamegraph is not an SVG"

figure() { awk -v what="$1" -v ms="$2" 'BEGIN { printf "%-44s %6.1f s\n", what, ms / 1000 }'; }
echo "first run, from scripts/run to the first merged flamegraph (this machine: $(nproc) cores)"
figure "installing packages (install-deps --run)" "$installed"
figure "building for release, then starting" "$((running - installed))"
figure "the start curl" "$((asked - running))"
figure "the profile (30 s asked) to its upload" "$((profiled - asked))"
figure "the merged flamegraph" "$((drawn - profiled))"
figure "in all" "$drawn"
