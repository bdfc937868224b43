#!/usr/bin/env bash
# The Debian packages as a fleet gets them: lintian, then install, upgrade, remove and purge in a
# throwaway root (throwaway_root.sh: the host is never changed), checked by package_checks.sh.
# The packages come from $DORMANT_PACKAGES_DIR (scripts/test writes them with scripts/package).
# The upgrade installs the same packages repacked as a newer version whose conffiles changed.
set -euo pipefail
here=$(dirname "$(realpath "$0")")
skip() {
  echo "SKIPPED: $*"
  exit 77
}
[[ $(id -u) == 0 ]] || skip "installing packages into a throwaway root needs root"
[[ -n ${DORMANT_PACKAGES_DIR:-} ]] ||
  skip "DORMANT_PACKAGES_DIR is not set (scripts/test sets it; scripts/package builds them)"
agent_deb=$(compgen -G "$DORMANT_PACKAGES_DIR/dormant-agent_*.deb" || true)
server_deb=$(compgen -G "$DORMANT_PACKAGES_DIR/dormant-server_*.deb" || true)
if [[ ! -f $agent_deb || ! -f $server_deb ]]; then
  echo "FAILED: no dormant-agent and dormant-server packages (one each) in $DORMANT_PACKAGES_DIR"
  exit 1
fi

echo "== lintian (errors fail the test)"
lintian --fail-on error "$agent_deb" "$server_deb" 2>&1 |
  { grep -v "running with root privileges" || true; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# The package as its next version would be: version +next, a line added to each conffile.
next_version() {
  local deb=$1 tree=$work/repack
  rm -rf "$tree"
  dpkg-deb -R "$deb" "$tree"
  sed -i 's/^Version: .*/&+next/' "$tree/DEBIAN/control"
  while read -r conffile; do
    echo "# a default added by the next version" >>"$tree$conffile"
  done <"$tree/DEBIAN/conffiles"
  (cd "$tree" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | xargs -0 md5sum \
    >DEBIAN/md5sums)
  local next
  next=$work/$(basename "$deb" .deb)+next.deb
  dpkg-deb --root-owner-group -b "$tree" "$next" >/dev/null
  echo "$next"
}
agent_next=$(next_version "$agent_deb")
server_next=$(next_version "$server_deb")

mkdir "$work/root"
unshare --mount --propagation private "$here/throwaway_root.sh" "$work/root" \
  "$here/package_checks.sh" "$agent_deb" "$server_deb" "$agent_next" "$server_next"
