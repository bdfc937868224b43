#!/usr/bin/env bash
# What merging a busy host's profiles costs dormant-server (issue 20): COUNT one-minute profiles
# of a busy host (tests/bench/upload_profiles.py, from 2026-11-20) stored on SQLite, then each
# format of GET /api/flamegraph?service=busy over their two days timed by curl, with the server's peak RSS (VmHWM) and RssAnon
# before and after. Usage: merge_bench.sh BUILD_DIR [COUNT (default 1000)] [STACKS (default 3000)]
set -euo pipefail
build=${1:?usage: merge_bench.sh BUILD_DIR [COUNT] [STACKS]}
count=${2:-1000}
stacks=${3:-3000}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
server=
trap '[[ -n $server ]] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT

"$here/../../scripts/gen-certs" "$work/certs" >/dev/null
echo "bench-token" >"$work/tokens"
chmod 600 "$work/tokens"
"$build/server/dormant-server" --listen 127.0.0.1 --port 0 --data-dir "$work/data" \
  --tokens-file "$work/tokens" --tls-cert "$work/certs/server.pem" \
  --tls-key "$work/certs/server.key" --log-level warn --minute-rollup-days 0 \
  --hour-rollup-days 0 --day-rollup-days 0 >"$work/server.out" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q listening "$work/server.out" 2>/dev/null && break; sleep 0.1; done
port=$(sed -n 's/.*listening.*://p' "$work/server.out" | head -1)

python3 "$here/upload_profiles.py" "$port" "$work/certs/ca.pem" bench-token busy "$count" "$stacks"
memory() { awk '/VmHWM|RssAnon/ { printf "%s %.1f MB  ", $1, $2 / 1024 }' "/proc/$server/status"; }
echo "server after the uploads: $(memory)"
for format in collapsed svg pprof; do
  echo 5 >"/proc/$server/clear_refs"  # VmHWM back to the current RSS
  timing=$(curl -sS --cacert "$work/certs/ca.pem" -H "Authorization: Bearer bench-token" \
    -o "$work/merged.$format" -w '%{http_code} %{time_total}' \
    "https://localhost:$port/api/flamegraph?service=busy&format=$format&since=2026-11-20T00:00:00Z&until=2026-11-22T00:00:00Z")
  read -r code seconds <<<"$timing"
  [[ $code == 200 ]] || { echo "merge as $format: HTTP $code" >&2; exit 1; }
  printf "merge of %d profiles as %-9s %6.2f s, %6.1f MB out; server %s\n" "$count" "$format" \
    "$seconds" "$(awk -v b="$(stat -c %s "$work/merged.$format")" 'BEGIN { print b / 1048576 }')" \
    "$(memory)"
done
distinct=$(($(wc -l <"$work/merged.collapsed") - 1))
echo "distinct stacks in the merge: $distinct"
