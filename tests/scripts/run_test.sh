#!/usr/bin/env bash
# The README's first command, scripts/run, as a new user meets it: on the release build that
# scripts/test made (DORMANT_PLAIN_AGENT names its agent), it starts the server and the agent,
# and every curl it prints works: a profile is started (for 5 s, not the printed 30), listed,
# drawn merged, and stopped. A second scripts/run says that the first runs and exits 0; one on a
# port another program holds exits 1 naming DORMANT_PORT. TERM stops both programs.
set -euo pipefail
skip() {
  echo "SKIPPED: $*"
  exit 77
}
[[ $(id -u) == 0 ]] || skip "the agent's perf profiles the whole host as root"
[[ -n ${DORMANT_PLAIN_AGENT:-} && -x ${DORMANT_PLAIN_AGENT:-} ]] ||
  skip "DORMANT_PLAIN_AGENT does not name the release build's agent (scripts/test sets it)"
cd "$(dirname "$0")/../.."
release=$(dirname "$(dirname "$DORMANT_PLAIN_AGENT")")

work=$(mktemp -d)
run_pid=
holder_pid=
cleanup() {
  [[ -z $holder_pid ]] || kill "$holder_pid" 2>/dev/null || true
  if [[ -n $run_pid ]] && kill -0 "$run_pid" 2>/dev/null; then
    kill -TERM "$run_pid"
    wait "$run_pid" || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT
fail() {  # on standard error: it may be called where the output is a variable's
  {
    echo "FAILED: $*"
    echo "---- scripts/run's output"
    cat "$work/run.out" 2>/dev/null || true
  } >&2
  exit 1
}

free_port() {
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
export DORMANT_BUILD_DIR=$release DORMANT_RUN_DIR=$work/run DORMANT_OUTPUT_DIR=$work/out
export DORMANT_SERVICE=run-test DORMANT_PORT
DORMANT_PORT=$(free_port)

scripts/run >"$work/run.out" 2>&1 &
run_pid=$!
for _ in $(seq 600); do
  grep -q "^Dormant is running" "$work/run.out" && break
  kill -0 "$run_pid" 2>/dev/null || fail "scripts/run ended before it said it was running"
  sleep 0.2
done
grep -q "^Dormant is running" "$work/run.out" || fail "not running after 120 s"
echo "scripts/run is running"

# The commands it printed, each as a user would paste it.
printed() {  # printed PATTERN: the printed command line that matches PATTERN
  local line
  line=$(grep -E -m 1 "^  curl .*$1" "$work/run.out") || fail "no printed curl matches '$1'"
  echo "${line#  }"
}
run_printed() {  # run_printed COMMAND: its output; a failed curl fails the test
  (cd "$work" && bash -c "$1 --fail-with-body --max-time 30") || fail "the printed '$1' failed"
}
start=$(printed '"request_type":"start"')
start=${start/\"duration\":30/\"duration\":5}
answer=$(run_printed "$start")
grep -q '"success":true' <<<"$answer" || fail "start answered $answer"
for pattern in '/api/hosts$' '/api/commands$'; do
  listed=$(run_printed "$(printed "$pattern")")
  grep -q "$DORMANT_SERVICE" <<<"$listed" || fail "$pattern lists nothing: $listed"
done
profiles=$(printed '/api/profiles$')
for _ in $(seq 120); do
  listed=$(run_printed "$profiles")
  grep -q '"gpid"' <<<"$listed" && break
  sleep 0.5
done
grep -q '"gpid"' <<<"$listed" || fail "no profile 60 s after a 5 s start: $listed"
run_printed "$(printed 'service.svg')" >/dev/null
grep -q "<svg" "$work/service.svg" || fail "the merged flamegraph is not an SVG"
answer=$(run_printed "$(printed '"request_type":"stop"')")
grep -q '"success":true' <<<"$answer" || fail "stop answered $answer"
echo "every printed curl works"

second=$(scripts/run 2>&1) || fail "a second scripts/run exited $?: $second"
grep -q "already running" <<<"$second" || fail "a second scripts/run said: $second"
echo "a second scripts/run says: $second"

other_port=$(free_port)
/usr/bin/python3 -c 'import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(); time.sleep(300)' \
  "$other_port" &
holder_pid=$!
sleep 0.5
status=0
taken=$(DORMANT_RUN_DIR=$work/run2 DORMANT_PORT=$other_port scripts/run 2>&1) || status=$?
((status == 1)) || fail "scripts/run on a port another program holds exited $status: $taken"
grep -q "another program listens on port $other_port" <<<"$taken" ||
  fail "scripts/run on a taken port said: $taken"
echo "on a taken port: $taken"

kill -TERM "$run_pid"
status=0
wait "$run_pid" || status=$?
run_pid=
((status == 0)) || fail "scripts/run exited $status on TERM"
if pgrep -f -- "$work/run/" >/dev/null; then
  fail "left running after TERM: $(pgrep -af -- "$work/run/")"
fi
echo "TERM stopped the server and the agent"
