#!/usr/bin/env bash
# Run inside a throwaway root by install_test.sh: installs the packages, checks what they put
# where, runs both programs as their units would, upgrades with edited configuration, removes
# and purges, checking each step. Prints every failed check; exits non-zero if any failed.
# Usage: package_checks.sh AGENT_DEB SERVER_DEB AGENT_NEXT_DEB SERVER_NEXT_DEB
set -uo pipefail
agent_deb=$1 server_deb=$2 agent_next=$3 server_next=$4
failures=0
fail() {
  echo "FAILED: $*"
  failures=$((failures + 1))
}
# Prints the command's output only when it fails.
check() {
  local what=$1 output
  shift
  if output=$("$@" 2>&1); then
    echo "ok: $what"
  else
    [[ -n $output ]] && echo "$output"
    fail "$what"
  fi
}
# PATH is OWNER:GROUP with octal MODE.
check_stat() {
  local actual
  actual=$(stat -c '%U:%G %a' "$1" 2>&1)
  if [[ $actual == "$2" ]]; then echo "ok: $1 is $2"; else fail "$1 is '$actual', not '$2'"; fi
}
absent() { [[ ! -e $1 && ! -L $1 ]]; }
agent_cannot_write() {
  ! setpriv --reuid dormant-agent --regid dormant-agent --init-groups test -w "$1"
}
status_of() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null; }
run_dpkg() {
  echo "+ dpkg $*"
  dpkg "$@" || fail "dpkg $* exited $?"
}
unit_dir=/lib/systemd/system

# A host that has them installed is not changed: only this root is.
for package in dormant-agent dormant-server; do
  [[ $(status_of $package) == *" installed" ]] && dpkg --purge $package >/dev/null
done
# What an agent run on this host by hand left (the upgrade below checks that case).
rm -rf /var/lib/dormant /var/lib/dormant-server

echo "== install"
run_dpkg -i "$agent_deb" "$server_deb"
check "dormant-agent installed" [ "$(status_of dormant-agent)" == "install ok installed" ]
check "dormant-server installed" [ "$(status_of dormant-server)" == "install ok installed" ]
check_stat /usr/lib/dormant/dormant-agent "root:root 755"
check_stat /usr/lib/dormant/dormant-pprof "root:root 755"
check_stat /usr/lib/dormant/libdormant_profilers.so "root:root 644"
if dpkg -L dormant-agent | grep -qx /usr/lib/dormant/libdormant_cupti.so; then
  check_stat /usr/lib/dormant/libdormant_cupti.so "root:root 644"
fi
check "/usr/bin/dormant-agent links to ../lib/dormant/dormant-agent" \
  [ "$(readlink /usr/bin/dormant-agent)" == ../lib/dormant/dormant-agent ]
check_stat /usr/bin/dormant-server "root:root 755"
check_stat /etc/dormant/agent.conf "root:dormant-agent 640"
check "the agent's user cannot rewrite its settings" agent_cannot_write /etc/dormant/agent.conf
check_stat /etc/dormant/server.conf "root:root 644"
check_stat $unit_dir/dormant-agent.service "root:root 644"
check_stat $unit_dir/dormant-server.service "root:root 644"
check_stat /var/lib/dormant "dormant-agent:dormant-agent 700"
check_stat /var/lib/dormant-server "dormant-server:dormant-server 700"
check "agent.conf is a conffile" \
  grep -q "^ /etc/dormant/agent.conf " <<<"$(dpkg-query -W -f='${Conffiles}' dormant-agent)"
check "server.conf is a conffile" \
  grep -q "^ /etc/dormant/server.conf " <<<"$(dpkg-query -W -f='${Conffiles}' dormant-server)"
for user in dormant-agent:/var/lib/dormant dormant-server:/var/lib/dormant-server; do
  IFS=: read -r _ _ uid gid _ home shell <<<"$(getent passwd "${user%:*}")"
  check "${user%:*} is a system user (uid $uid < 1000)" [ "${uid:-1000}" -lt 1000 ]
  check "${user%:*}'s home is its state dir" [ "$home" == "${user#*:}" ]
  check "${user%:*} cannot log in ($shell)" [ "$shell" == /usr/sbin/nologin ]
  check "${user%:*}'s group" [ "$(getent group "${user%:*}" | cut -d: -f3)" == "$gid" ]
done
agent_uid=$(id -u dormant-agent) server_uid=$(id -u dormant-server)

echo "== units"
for unit in dormant-agent dormant-server; do
  check "systemd-analyze verify $unit.service" systemd-analyze verify $unit_dir/$unit.service
done
# The exposure these units reach today (docs/packaging.md): a change that loosens one fails here.
check "agent unit's exposure at most 2.8" systemd-analyze security --offline=true \
  --threshold=28 --no-pager $unit_dir/dormant-agent.service
check "server unit's exposure at most 1.2" systemd-analyze security --offline=true \
  --threshold=12 --no-pager $unit_dir/dormant-server.service
systemd-analyze security --offline=true --no-pager $unit_dir/dormant-{agent,server}.service |
  grep "Overall exposure"
check "the admin can enable the agent's unit" systemctl enable dormant-agent.service

echo "== the agent profiles as its user, with its unit's capabilities and configuration"
check "dormant-agent --version" grep -qx "dormant-agent .*" <<<"$(dormant-agent --version)"
# The unit's capability set, less what this machine's bounding set lacks (containers).
caps=
for cap in $(sed -n 's/^CapabilityBoundingSet=//p' $unit_dir/dormant-agent.service); do
  cap=${cap#CAP_}
  if capsh --has-b="cap_${cap,,}" 2>/dev/null; then
    caps+=",+${cap,,}"
  else
    echo "note: this machine's bounding set lacks CAP_$cap: profiling without it"
  fi
done
if setpriv --reuid dormant-agent --regid dormant-agent --init-groups --inh-caps "-all$caps" \
  --ambient-caps "-all$caps" --bounding-set "-all$caps" --no-new-privs \
  dormant-agent --config /etc/dormant/agent.conf -d 1 -o /tmp/profile; then
  samples=$(grep -v '^#' /tmp/profile/last_profile.col 2>/dev/null | awk '{n += $NF} END {print n + 0}')
  check "a one-shot profile from the installed agent ($samples samples)" [ "$samples" -gt 0 ]
else
  fail "the installed agent could not profile (see its log above)"
fi

echo "== the server serves as its user, from its data dir"
install -m 0600 -o dormant-server -g dormant-server /dev/null /etc/dormant/server-tokens
echo "test-token agent" >/etc/dormant/server-tokens
setpriv --reuid dormant-server --regid dormant-server --init-groups --no-new-privs \
  dormant-server --config /etc/dormant/server.conf --insecure-http --port 0 \
  --tokens-file /etc/dormant/server-tokens >/tmp/server.log 2>&1 &
server=$!
port=
for _ in $(seq 100); do
  port=$(sed -n 's|^dormant-server listening on http://[^:]*:\([0-9]*\)$|\1|p' /tmp/server.log)
  [[ -n $port ]] && break
  sleep 0.1
done
check "server health check" curl -sf "http://127.0.0.1:${port:-1}/api/v1/health_check" -o /dev/null
kill $server
wait $server
check "the server's database belongs to its user" \
  [ "$(stat -c %U:%G /var/lib/dormant-server/dormant.db)" == dormant-server:dormant-server ]

echo "== upgrade, with the configuration edited and state kept"
install -m 0600 /dev/null /etc/dormant/agent-token
echo "# edited by the admin" >>/etc/dormant/agent.conf
# As the agent's settings were before: its user's.
chown dormant-agent:dormant-agent /etc/dormant/agent.conf
chmod 0600 /etc/dormant/agent.conf
# As an agent that ran as root (version 0.1.0 did) leaves its state: root's, with a link in it.
echo "kept" >/var/lib/dormant/state-marker
chmod 0644 /var/lib/dormant/state-marker
install -d -m 0755 /var/lib/dormant/spool
ln -s /etc/shadow /var/lib/dormant/spool/link
chown -R -h root:root /var/lib/dormant
shadow_owner=$(stat -c %U:%G /etc/shadow)
run_dpkg -i --force-confold "$agent_next" "$server_next"
check "dormant-agent upgraded" [ "$(dpkg-query -W -f='${Version}' dormant-agent)" == \
  "$(dpkg-deb -f "$agent_next" Version)" ]
check "dormant-server upgraded" [ "$(dpkg-query -W -f='${Version}' dormant-server)" == \
  "$(dpkg-deb -f "$server_next" Version)" ]
check "the admin's agent.conf is kept" grep -qx "# edited by the admin" /etc/dormant/agent.conf
check_stat /etc/dormant/agent.conf "root:dormant-agent 640"
check "the new agent.conf is beside it" grep -q "next version" /etc/dormant/agent.conf.dpkg-dist
check "the unedited server.conf is the new one" grep -q "next version" /etc/dormant/server.conf
check "the agent's state is kept" grep -qx kept /var/lib/dormant/state-marker
check_stat /var/lib/dormant "dormant-agent:dormant-agent 700"
check_stat /var/lib/dormant/state-marker "dormant-agent:dormant-agent 644"
check_stat /var/lib/dormant/spool "dormant-agent:dormant-agent 755"
check "a link in the state directory is handed over, not what it points to" \
  [ "$(stat -c %U:%G /etc/shadow)" == "$shadow_owner" ]
check "the server's data is kept" test -s /var/lib/dormant-server/dormant.db
check "dormant-agent keeps its uid" [ "$(id -u dormant-agent)" == "$agent_uid" ]
check "dormant-server keeps its uid" [ "$(id -u dormant-server)" == "$server_uid" ]
check "the upgraded agent runs" dormant-agent --version

echo "== remove keeps configuration, state and user"
run_dpkg -r dormant-agent dormant-server
check "dormant-agent removed" [ "$(status_of dormant-agent)" == "deinstall ok config-files" ]
check "dormant-server removed" [ "$(status_of dormant-server)" == "deinstall ok config-files" ]
for path in /usr/lib/dormant /usr/bin/dormant-agent /usr/bin/dormant-server \
  $unit_dir/dormant-agent.service $unit_dir/dormant-server.service; do
  check "$path is gone" absent "$path"
done
for path in /etc/dormant/agent.conf /etc/dormant/server.conf /var/lib/dormant/state-marker \
  /var/lib/dormant-server/dormant.db; do
  check "$path is kept" test -e "$path"
done
check "the users are kept" getent passwd dormant-agent dormant-server

echo "== purge leaves nothing"
run_dpkg --purge dormant-agent dormant-server
for package in dormant-agent dormant-server; do
  check "$package purged" [ -z "$(status_of $package | grep -v not-installed)" ]
done
for path in /etc/dormant /var/lib/dormant /var/lib/dormant-server \
  /etc/systemd/system/multi-user.target.wants/dormant-agent.service; do
  check "$path is gone" absent "$path"
done
for user in dormant-agent dormant-server; do
  check "the user $user is gone" test -z "$(getent passwd $user)"
  check "the group $user is gone" test -z "$(getent group $user)"
done

((failures == 0)) && echo "all package checks passed" || echo "$failures package checks failed"
((failures == 0))
