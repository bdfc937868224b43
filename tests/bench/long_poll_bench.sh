#!/usr/bin/env bash
# Long-polled heartbeats (?wait=N) on dormant-server:
#   latency   from the `curl` that posts a profiling request to the answer of the heartbeat its
#             host holds open: ROUNDS rounds (long_poll_latency), start and stop in turn, on
#               sqlite   one server, the heartbeat and the request on it
#               pg x2    two servers sharing a PostgreSQL database; the heartbeat held on B, the
#                        request made on A, so the wake-up goes through LISTEN/NOTIFY
#             The issue's target: p99 <= 200 ms with agents long-polling at a 30 s interval.
#   memory    HELD agents, each on its own keep-alive TLS connection with one heartbeat held
#             (heartbeat_load --wait), on one server: its RSS, RssAnon and USS (Private_Clean +
#             Private_Dirty of /proc/PID/smaps_rollup) before the connections and with all of
#             them held, and the difference per connection; then again once they have all been
#             answered and closed, which shows what the allocator keeps. The server's counters
#             show that all were held (heartbeats in, none answered yet) and that all ran to the
#             end of the wait.
# PostgreSQL is a private cluster in a temporary folder with its durability defaults. The clients,
# the servers and PostgreSQL all share this machine's cores.
# Usage: long_poll_bench.sh [BUILD_DIR (default build/dev)]
# Environment: DORMANT_SERVER_BIN, LONG_POLL_LATENCY_BIN, HEARTBEAT_LOAD_BIN (default: under
# BUILD_DIR), PG_BIN (default: the newest /usr/lib/postgresql/*/bin), BENCH_ROUNDS (200),
# BENCH_PAUSE_MS (200: how long each heartbeat is held before the request), BENCH_WAIT (30),
# BENCH_HELD (10000), BENCH_MEMORY_WAIT (60: the first heartbeats must still be held when the
# last connection is up, which took 22 s on 2 busy cores), BENCH_PARTS ("latency memory"),
# BENCH_MEMORY_CASES ("pg sqlite"), BENCH_SERVER_ARGS (more dormant-server flags), BENCH_PG_ARGS
# (more postgres flags).
# Exits 1 if a check failed: a heartbeat not held, an answer without the new command, a request
# or connection that failed, or not all HELD held at once.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build/dev}
server_src=${DORMANT_SERVER_BIN:-$build/server/dormant-server}
latency_src=${LONG_POLL_LATENCY_BIN:-$build/tests/bench/long_poll_latency}
load_src=${HEARTBEAT_LOAD_BIN:-$build/tests/bench/heartbeat_load}
pg_bin=${PG_BIN:-$(printf '%s\n' /usr/lib/postgresql/*/bin | sort -V | tail -n 1)}
rounds=${BENCH_ROUNDS:-200}
pause_ms=${BENCH_PAUSE_MS:-200}
wait_s=${BENCH_WAIT:-30}
memory_wait_s=${BENCH_MEMORY_WAIT:-60}
held=${BENCH_HELD:-10000}
parts=" ${BENCH_PARTS:-latency memory} "
read -r -a memory_cases <<<"${BENCH_MEMORY_CASES:-pg sqlite}"
for file in "$server_src" "$latency_src" "$load_src" "$pg_bin/initdb" "$pg_bin/postgres"; do
  [[ -x $file ]] || { echo "long_poll_bench: $file is missing" >&2; exit 1; }
done
command -v curl >/dev/null || { echo "long_poll_bench: curl is missing" >&2; exit 1; }

# A descriptor per connection, in the load generator and in the server; both raise their soft
# limit to the hard one.
need=$((held + 1024))
if [[ $(ulimit -Hn) != unlimited ]] && (($(ulimit -Hn) < need)); then
  ulimit -n "$need" 2>/dev/null ||
    { echo "long_poll_bench: $held connections need ulimit -n $need (hard limit $(ulimit -Hn))" >&2
      exit 1; }
fi

# shellcheck source=tests/bench/bench_servers.sh
source "$here/bench_servers.sh"
bench_init "$server_src"
read -r -a server_args <<<"${BENCH_SERVER_ARGS:-}"
server_args+=(--long-poll-max "$((wait_s > memory_wait_s ? wait_s : memory_wait_s))")
read -r -a pg_args <<<"${BENCH_PG_ARGS:-}"
cp "$latency_src" "$work/long_poll_latency"
cp "$load_src" "$work/heartbeat_load"
start_postgres "$pg_bin" "${pg_args[@]}"

# metric PORT NAME: the value of one of the server's counters.
metric() {
  curl -sS --fail --cacert "$work/certs/ca.pem" --resolve "localhost:$1:127.0.0.1" \
    -H "Authorization: Bearer bench-operator" "https://localhost:$1/metrics" |
    awk -v name="$2" '$1 == name { print $2; found = 1 } END { if (!found) print 0 }'
}

failures=0
latency_rows=()
# latency CASE HOLD_PORT REQUEST_PORT
latency() {
  local woken expired
  woken=$(metric "$2" dormant_server_long_polls_woken_total)
  expired=$(metric "$2" dormant_server_long_polls_expired_total)
  local out status=0
  out=$("$work/long_poll_latency" --hold-port "$2" --request-port "$3" --ca "$work/certs/ca.pem" \
    --agent-token bench-token --operator-token bench-operator --rounds "$rounds" \
    --pause-ms "$pause_ms" --wait "$wait_s" 2>"$work/latency.err") || status=$?
  woken=$(($(metric "$2" dormant_server_long_polls_woken_total) - woken))
  expired=$(($(metric "$2" dormant_server_long_polls_expired_total) - expired))
  echo "  $1 (heartbeat held on :$2, request to :$3): $woken held heartbeats woken," \
    "$expired expired"
  sed 's/^/    /' <<<"$out"
  [[ -s $work/latency.err ]] && head -n 20 "$work/latency.err" | sed 's/^/    error: /'
  if ((status != 0)); then
    echo "    long_poll_latency exited $status"
    failures=$((failures + 1))
  fi
  local p50 p95 p99 max verdict
  local number='([0-9.]+) ms'
  if [[ $out =~ p50\ $number,\ p95\ $number,\ p99\ $number,\ max\ $number ]]; then
    p50=${BASH_REMATCH[1]} p95=${BASH_REMATCH[2]} p99=${BASH_REMATCH[3]} max=${BASH_REMATCH[4]}
  fi
  verdict=$(awk -v p99="${p99:-}" 'BEGIN { print (p99 != "" && p99 <= 200) ? "met" : "MISSED" }')
  latency_rows+=("$(printf '%-8s %8s %8s %8s %8s   %s' "$1" "${p50:--}" "${p95:--}" "${p99:--}" \
    "${max:--}" "$verdict")")
}

# memory_kb PID: "RSS RssAnon USS" in kB.
memory_kb() {
  local rss anon uss
  rss=$(awk '$1 == "VmRSS:" { print $2 }' "/proc/$1/status")
  anon=$(awk '$1 == "RssAnon:" { print $2 }' "/proc/$1/status")
  uss=$(awk '$1 == "Private_Clean:" || $1 == "Private_Dirty:" { kb += $2 } END { print kb }' \
    "/proc/$1/smaps_rollup")
  echo "$rss $anon $uss"
}

memory_rows=()
# memory CASE: holds $held heartbeats on the one server started.
memory() {
  local pid=${server_pids[0]} port=${ports[0]}
  local heartbeats woken expired
  heartbeats=$(metric "$port" dormant_server_heartbeats_total)  # also a first TLS connection
  woken=$(metric "$port" dormant_server_long_polls_woken_total)
  expired=$(metric "$port" dormant_server_long_polls_expired_total)
  sleep 1
  local before
  before=$(memory_kb "$pid")
  local started=$SECONDS
  "$work/heartbeat_load" --port "$port" --ca "$work/certs/ca.pem" --token bench-token \
    --agents "$held" --hosts "$held" --rate 0 --wait "$memory_wait_s" --seconds 1 --warmup 0 \
    >"$work/load.out" 2>"$work/load.err" &
  local load=$!
  # All in when the server has taken $held more heartbeats: it counts each when it comes in
  # (before holding it), and again when it answers it.
  local in=0 answered_yet=0
  while kill -0 "$load" 2>/dev/null; do
    answered_yet=$(($(metric "$port" dormant_server_long_polls_woken_total) - woken +
      $(metric "$port" dormant_server_long_polls_expired_total) - expired))
    in=$(($(metric "$port" dormant_server_heartbeats_total) - heartbeats - answered_yet))
    ((in >= held || answered_yet > 0)) && break
    sleep 0.5
  done
  local in_after=$((SECONDS - started))
  sleep 1  # the last one counted is armed a moment later
  local with
  with=$(memory_kb "$pid")
  answered_yet=$(($(metric "$port" dormant_server_long_polls_woken_total) - woken +
    $(metric "$port" dormant_server_long_polls_expired_total) - expired))
  local load_status=0
  wait "$load" || load_status=$?
  sleep 2  # the server closes its side
  local after
  after=$(memory_kb "$pid")
  woken=$(($(metric "$port" dormant_server_long_polls_woken_total) - woken))
  expired=$(($(metric "$port" dormant_server_long_polls_expired_total) - expired))
  echo "  $1: $in heartbeats in after ${in_after} s (connections included), $answered_yet of" \
    "them answered when measured; in the end $expired expired, $woken woken"
  if ((in < held || answered_yet > 0)); then
    echo "    NOT all $held held at once when measured: the figures below undercount"
    failures=$((failures + 1))
  fi
  sed 's/^/    /' "$work/load.out"
  [[ -s $work/load.err ]] && head -n 10 "$work/load.err" | sed 's/^/    error: /'
  if ((load_status != 0)); then
    echo "    heartbeat_load exited $load_status"
    failures=$((failures + 1))
  fi
  local b w a
  read -r -a b <<<"$before"
  read -r -a w <<<"$with"
  read -r -a a <<<"$after"
  memory_rows+=("$(awk -v c="$1" -v n="$held" -v r0="${b[0]}" -v a0="${b[1]}" -v u0="${b[2]}" \
    -v r1="${w[0]}" -v a1="${w[1]}" -v u1="${w[2]}" \
    -v r2="${a[0]}" -v a2="${a[1]}" -v u2="${a[2]}" 'BEGIN {
      printf "%-7s %6.1f %6.1f %6.1f  %6.1f %6.1f %6.1f  %5.1f %5.1f %5.1f  %6.1f %6.1f %6.1f", c,
        r0 / 1024, a0 / 1024, u0 / 1024, r1 / 1024, a1 / 1024, u1 / 1024,
        (r1 - r0) / n, (a1 - a0) / n, (u1 - u0) / n, r2 / 1024, a2 / 1024, u2 / 1024 }')")
}

pg_version=$("$pg_bin/postgres" --version | awk '{print $3}')${BENCH_PG_ARGS:+ ($BENCH_PG_ARGS)}
echo "== long-polled heartbeats on dormant-server. PostgreSQL $pg_version with fsync on;" \
  "$(nproc) cores shared by the clients, the servers and" \
  "PostgreSQL${BENCH_SERVER_ARGS:+; dormant-server $BENCH_SERVER_ARGS}"

latency_part() {
  echo "== request -> held heartbeat's answer, $rounds rounds, ?wait=$wait_s, each heartbeat held" \
    "${pause_ms} ms before the request"
  start_server sqlite --data-dir "$work/sqlite"
  wait_for_servers sqlite
  latency sqlite "${ports[0]}" "${ports[0]}"
  stop_servers

  "$pg_bin/createdb" -h "$pg" -U dormant latency
  start_server pga --database "postgresql://dormant@/latency?host=$pg"
  start_server pgb --database "postgresql://dormant@/latency?host=$pg"
  wait_for_servers pga pgb
  latency "pg x2" "${ports[1]}" "${ports[0]}"
  stop_servers

  printf '%-8s %8s %8s %8s %8s   %s\n' case "p50 ms" "p95 ms" "p99 ms" "max ms" "p99 <= 200 ms"
  printf '%s\n' "${latency_rows[@]}"
}

memory_part() {
  echo "== $held long-polls held on one server (one heartbeat_load, one TLS connection each," \
    "distinct hosts, no commands, ?wait=$memory_wait_s); anon: RssAnon," \
    "USS: Private_Clean + Private_Dirty"
  local memory_case
  for memory_case in "${memory_cases[@]}"; do
    case $memory_case in
      pg)
        "$pg_bin/createdb" -h "$pg" -U dormant memory
        start_server pg --database "postgresql://dormant@/memory?host=$pg"
        wait_for_servers pg
        ;;
      sqlite)
        start_server sqlite --data-dir "$work/sqlite-memory"
        wait_for_servers sqlite
        ;;
      *) echo "long_poll_bench: unknown memory case $memory_case (pg, sqlite)" >&2; exit 1 ;;
    esac
    memory "$memory_case"
    stop_servers
  done
  printf '%-7s %-20s  %-20s  %-17s  %-20s\n' "" "before (MB)" "$held held (MB)" "per held (KiB)" \
    "all closed (MB)"
  printf '%-7s %6s %6s %6s  %6s %6s %6s  %5s %5s %5s  %6s %6s %6s\n' case RSS anon USS RSS anon \
    USS RSS anon USS RSS anon USS
  printf '%s\n' "${memory_rows[@]}"
}

# Not `[[ ]] && part`: errexit would be off inside the function.
if [[ $parts == *" latency "* ]]; then
  latency_part
fi
if [[ $parts == *" latency "* && $parts == *" memory "* ]]; then
  echo
fi
if [[ $parts == *" memory "* ]]; then
  memory_part
fi
((failures == 0))
