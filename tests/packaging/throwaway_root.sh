#!/usr/bin/env bash
# Runs SCRIPT (bash) with ARGS in a throwaway copy of this machine's root: an overlay over / whose
# changes go to a tmpfs, chrooted into, with its own /proc, /tmp and /run. Run it in a private
# mount namespace (unshare --mount): everything it mounts, and every change made inside, is gone
# when it exits. FILES named in ARGS are copied in and passed by their paths inside.
# Usage: unshare --mount throwaway_root.sh WORK_DIR SCRIPT [FILE...]
set -euo pipefail
work=$1 script=$2
shift 2
mount -t tmpfs throwaway "$work"
mkdir "$work/upper" "$work/overlay" "$work/root"
mount -t overlay throwaway -o "lowerdir=/,upperdir=$work/upper,workdir=$work/overlay" "$work/root"
root=$work/root
mount -t proc proc "$root/proc"
mount --rbind /dev "$root/dev"
mount --rbind /sys "$root/sys"
mount -t tmpfs tmpfs "$root/tmp"
mount -t tmpfs tmpfs "$root/run"
# As in any chroot: no service is started by a package's scripts.
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 0755 "$root/usr/sbin/policy-rc.d"
mkdir "$root/tmp/in"
inside=()
for file in "$@"; do
  cp "$file" "$root/tmp/in/"
  inside+=("/tmp/in/$(basename "$file")")
done
cp "$script" "$root/tmp/in/script.sh"
exec chroot "$root" /bin/bash /tmp/in/script.sh "${inside[@]}"
