#!/usr/bin/env bash
# The agent's unit grants enough, and no more than it says: the agent runs as a user of its own
# (a uid nobody else has) with exactly the capabilities the unit lists, read from the unit so that
# the two cannot drift apart, under its no_new_privs, umask, read-only paths, closed kernel log,
# device-less /dev, read-only system and system-call filter, and a perf session and an eBPF
# session each name the frames of root's workloads that only those capabilities reach:
#   hidden_ratio  a binary only root may read, in a folder only root may enter (CAP_DAC_READ_SEARCH)
#   ns_ratio      a binary that exists only in its own mount namespace, as in a container: named
#                 through /proc/PID/map_files (CAP_SYS_PTRACE, CAP_CHECKPOINT_RESTORE), by eBPF
#   dd            reading /dev/zero, all in the kernel: kernel frames named (CAP_SYSLOG where
#                 kptr_restrict or perf_event_paranoid hide /proc/kallsyms' addresses)
# A control run with CAP_PERFMON and CAP_BPF alone shows the workloads need what the unit grants.
# Usage: agent_least_privilege_test.sh AGENT KNOWN_RATIO SYSCALL_ALLOW_LIST_EXEC|"" UNIT_FILE
set -uo pipefail
agent=$(realpath "$1") known_ratio=$(realpath "$2") unit=$(realpath "$4")
allow_list_exec=${3:+$(realpath "$3")}
skip() {
  echo "SKIPPED: $*"
  exit 77
}
failures=0
fail() {
  echo "FAILED: $*"
  failures=$((failures + 1))
}
pass() { echo "ok: $*"; }

[[ $(id -u) == 0 ]] || skip "setting another user's capabilities needs root"
command -v perf >/dev/null || skip "perf is not installed (linux-perf)"
[[ -e /sys/kernel/btf/vmlinux ]] || skip "the kernel has no BTF, which the eBPF sampler needs"

# The unit's settings, one value per line of each key.
setting() { sed -n "s/^$1=//p" "$unit"; }
ambient=$(setting AmbientCapabilities | tr ' ' '\n' | sort | xargs)
bounding=$(setting CapabilityBoundingSet | tr ' ' '\n' | sort | xargs)
[[ -n $ambient && $ambient == "$bounding" ]] ||
  fail "the unit's ambient ($ambient) and bounding ($bounding) sets differ"
[[ $(setting User) == dormant-agent ]] ||
  fail "the unit runs as '$(setting User)', not as dormant-agent"
[[ $(setting NoNewPrivileges) == yes ]] || fail "the unit does not set NoNewPrivileges=yes"
[[ $(setting SystemCallErrorNumber) == EPERM ]] ||
  fail "the unit's SystemCallErrorNumber is '$(setting SystemCallErrorNumber)', not EPERM"
umask_value=$(setting UMask)
read -ra read_only_paths <<<"$(setting ReadOnlyPaths)"
read -ra inaccessible_paths <<<"$(setting InaccessiblePaths)"
caps='' cap_mask=0
for cap in $ambient; do
  name=${cap#CAP_}
  name=${name,,}
  capsh --has-b="cap_$name" 2>/dev/null ||
    skip "this machine's bounding set lacks $cap (a container?): the unit's set cannot be given"
  caps+=",+$name"
  bit=$(capsh --explain="cap_$name" | sed -n 's/.*CapXXX: 0x\([0-9a-f]*\).*/\1/p')
  cap_mask=$((cap_mask | 0x$bit))
done
echo "the unit's capabilities: $ambient"

# The unit's system-call filter as systemd reads it: the first line an allow list, later lines add
# to it, or (~) take away; groups expanded by systemd-analyze itself.
declare -A allowed=() expanded=()
expand() {
  local name=$1 member
  if [[ $name != @* ]]; then
    echo "$name"
    return
  fi
  [[ -n ${expanded[$name]:-} ]] && return
  expanded[$name]=1
  for member in $(systemd-analyze syscall-filter --no-pager "$name" 2>/dev/null |
    sed -e '1d' -e 's/^ *//' -e '/^#/d' -e '/^$/d'); do
    expand "$member"
  done
}
filter_lines=0
allow_list=$(mktemp)
while read -r line; do
  filter_lines=$((filter_lines + 1))
  deny=0
  [[ $line == "~"* ]] && deny=1 && line=${line#\~}
  ((filter_lines == 1 && deny)) && fail "the unit's system-call filter is not an allow list"
  for entry in $line; do
    expanded=()
    for call in $(expand "$entry"); do
      if ((deny)); then unset "allowed[$call]"; else allowed[$call]=1; fi
    done
  done
done < <(setting SystemCallFilter)
((filter_lines > 0)) || fail "the unit has no SystemCallFilter="
printf '%s\n' "${!allowed[@]}" | sort >"$allow_list"
chmod 0644 "$allow_list"
for call in bpf perf_event_open; do
  [[ -n ${allowed[$call]:-} ]] || fail "the unit's filter refuses $call, which profiling needs"
done
for call in ptrace process_vm_readv process_vm_writev; do
  [[ -z ${allowed[$call]:-} ]] || fail "the unit's filter allows $call"
done
if [[ -z $allow_list_exec ]]; then
  echo "NOTE: built without libseccomp (libseccomp-dev): the system-call filter is not applied"
elif [[ ! -x $allow_list_exec ]]; then
  fail "$allow_list_exec is not built"
fi

# A uid that no account and no process has.
uid=61000
while getent passwd "$uid" >/dev/null || getent group "$uid" >/dev/null ||
  pgrep -U "$uid" >/dev/null; do
  uid=$((uid + 1))
done
echo "the agent's user: uid $uid"

work=$(mktemp -d)
chmod 0755 "$work"
workloads=()
cleanup() {
  for pid in "${workloads[@]}"; do kill "$pid" 2>/dev/null; done
  wait 2>/dev/null
  rm -f "$allow_list"
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -m 0700 "$work/hidden"
install -m 0700 "$known_ratio" "$work/hidden/hidden_ratio"
mkdir -m 0755 "$work/namespace" "$work/dev"
: >"$work/inaccessible" && chmod 0000 "$work/inaccessible"

"$work/hidden/hidden_ratio" 300 &
workloads+=($!)
unshare --mount --propagation private sh -c "mount -t tmpfs namespace '$work/namespace' &&
  cp '$known_ratio' '$work/namespace/ns_ratio' && exec '$work/namespace/ns_ratio' 300" &
workloads+=($!)
timeout 300 dd if=/dev/zero of=/dev/null bs=1M 2>/dev/null &
workloads+=($!)

# LeakSanitizer stops the world with ptrace, which the unit's filter refuses: off here in
# sanitizer builds (the other agent tests check for leaks).
asan_options=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0

# The agent as its unit would run it, in a mount namespace of its own, giving it the capabilities
# GIVE: in $work/run-PROFILER-NAME, its output, exit status and the credentials it ran with. Its
# state directory is its own, as StateDirectory= makes /var/lib/dormant (which may be root's here).
# Usage: run_agent PROFILER GIVE NAME
run_agent() {
  local profiler=$1 give=$2
  local run=$work/run-$profiler-$3
  mkdir -m 0700 "$run" && mkdir -m 0700 "$run/tmp" && chown -R "$uid:$uid" "$run"
  local filter=()
  [[ -n $allow_list_exec ]] && filter=("$allow_list_exec" "$allow_list")
  # shellcheck disable=SC2016 # expanded by the inner bash
  unshare --mount --propagation private bash -c '
    set -e
    run=$1 work=$2 umask_value=$3 read_only=$4 inaccessible=$5 asan=$6
    shift 6
    # ReadOnlyPaths=, each mount below them too.
    for path in $read_only; do
      mount --rbind "$path" "$path"
      findmnt -rno TARGET -R "$path" | while read -r target; do
        mount -o remount,bind,ro "$target"
      done
    done
    for path in $inaccessible; do mount --bind "$work/inaccessible" "$path"; done
    # ProtectSystem=strict: everything read-only but /dev, /proc, /sys and the run folder.
    mount --bind "$run" "$run"
    findmnt -rno TARGET | while read -r target; do
      case $target in /dev | /dev/* | /proc | /proc/* | /sys | /sys/* | "$run") continue ;; esac
      mount -o remount,bind,ro "$target" 2>/dev/null || true
    done
    # PrivateDevices=: the pseudo-devices only.
    mount -t tmpfs -o mode=0755 dev "$work/dev"
    for device in null zero full random urandom tty; do
      : >"$work/dev/$device"
      mount --bind "/dev/$device" "$work/dev/$device"
    done
    mount --rbind "$work/dev" /dev
    umask "$umask_value"
    cd /
    exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin TMPDIR="$run/tmp" ASAN_OPTIONS="$asan" "$@"
  ' run_agent "$run" "$work" "$umask_value" "${read_only_paths[*]}" "${inaccessible_paths[*]}" \
    "$asan_options" setpriv --reuid="$uid" --regid="$uid" --clear-groups --inh-caps="-all$give" \
    --ambient-caps="-all$give" --bounding-set="-all$give" --no-new-privs \
    "${filter[@]}" "$agent" --system-profiler "$profiler" -o "$run/out" -d 4 -f 199 \
    --state-dir "$run/state" \
    >"$run/stdout" 2>"$run/stderr" &
  local agent_pid=$!
  for _ in $(seq 100); do
    [[ $(cat "/proc/$agent_pid/comm" 2>/dev/null) == dormant-agent ]] && break
    sleep 0.1
  done
  grep -E "^(Uid|CapEff|CapAmb|CapBnd|NoNewPrivs|Seccomp):" "/proc/$agent_pid/status" >"$run/status"
  # A 4 s session ends well within 2 minutes, however loaded the machine.
  for _ in $(seq 1200); do
    kill -0 $agent_pid 2>/dev/null || break
    sleep 0.1
  done
  if kill -KILL $agent_pid 2>/dev/null; then
    echo "the agent did not end within 2 minutes" >>"$run/stderr"
  fi
  wait $agent_pid
  echo $? >"$run/exit"
}

# Samples of COMM's stacks (in the collapsed profile PROFILE) holding FRAME (a regex).
samples() {
  local profile=$1 comm=$2 frame=$3
  # pid;container;comm;frame;...;frame COUNT
  grep -v '^#' "$profile" 2>/dev/null | awk -F';' -v comm="$comm" -v frame="$frame" '
    {
      count = $NF
      sub(/.* /, "", count)
      sub(/ [0-9]+$/, "", $NF)
      if ($3 != comm) next
      for (i = 4; i <= NF; i++) if ($i ~ frame) { n += count; next }
    }
    END { print n + 0 }'
}
named_kernel_frame='^[A-Za-z_][A-Za-z0-9_.]*_\[k\]'

for profiler in perf ebpf; do
  echo "== a $profiler session as uid $uid with the unit's capabilities"
  run_agent "$profiler" "$caps" unit
  run=$work/run-$profiler-unit profile=$work/run-$profiler-unit/out/last_profile.col
  if [[ $(cat "$run/exit") != 0 || ! -s $profile ]]; then
    fail "the $profiler session exited $(cat "$run/exit") and wrote no profile"
    cat "$run/stderr"
    continue
  fi
  status=$(cat "$run/status")
  want_caps=$(printf '%016x' "$cap_mask")
  seccomp_mode=2
  [[ -z $allow_list_exec ]] && seccomp_mode=0
  for expected in "Uid:	$uid	$uid	$uid	$uid" "CapEff:	$want_caps" "CapAmb:	$want_caps" \
    "CapBnd:	$want_caps" "NoNewPrivs:	1" "Seccomp:	$seccomp_mode"; do
    if grep -qxF "$expected" <<<"$status"; then pass "$profiler: $expected"; else
      fail "$profiler: the agent ran without '$expected':"$'\n'"$status"
    fi
  done
  started="perf: recording"
  [[ $profiler == ebpf ]] && started="ebpf: sampling"
  if grep -q "$started" "$run/stderr"; then pass "$profiler: $started"; else
    fail "$profiler did not run:"$'\n'"$(cat "$run/stderr")"
  fi
  checks=("hidden_ratio ^hot_two$" "hidden_ratio ^hot_one$" "dd $named_kernel_frame")
  [[ $profiler == ebpf ]] && checks+=("ns_ratio ^hot_two$" "ns_ratio ^hot_one$")
  for check in "${checks[@]}"; do
    read -r comm frame <<<"$check"
    n=$(samples "$profile" "$comm" "$frame")
    if ((n > 0)); then pass "$profiler: $n samples of $comm in $frame"; else
      fail "$profiler: no sample of $comm names $frame:"$'\n'"$(grep ";$comm;" "$profile" |
        head -5)"$'\n'"$(cat "$run/stderr")"
    fi
  done
  mode=$(stat -L -c %a "$profile")
  if [[ $mode == 600 ]]; then pass "$profiler: the profile is 0600"; else
    fail "$profiler: the profile is $mode"
  fi
done

echo "== control: an eBPF session with CAP_PERFMON and CAP_BPF alone names none of it"
run_agent ebpf ",+perfmon,+bpf" control
profile=$work/run-ebpf-control/out/last_profile.col
if [[ ! -s $profile ]]; then
  fail "the control session wrote no profile:"$'\n'"$(cat "$work/run-ebpf-control/stderr")"
else
  for comm in hidden_ratio ns_ratio; do
    n=$(samples "$profile" "$comm" "^hot_(one|two)$")
    if ((n == 0)); then pass "control: $comm unnamed without the unit's capabilities"; else
      fail "control: $comm named without the unit's capabilities: the test proves nothing"
    fi
  done
  if (($(cat /proc/sys/kernel/kptr_restrict) >= 1 ||
    $(cat /proc/sys/kernel/perf_event_paranoid) >= 2)); then
    n=$(samples "$profile" dd "$named_kernel_frame")
    if ((n == 0)); then pass "control: kernel frames unnamed without CAP_SYSLOG"; else
      fail "control: kernel frames named without CAP_SYSLOG"
    fi
  fi
fi

((failures == 0)) && echo "the agent profiles with its unit's privileges" ||
  echo "$failures checks failed"
((failures == 0))
