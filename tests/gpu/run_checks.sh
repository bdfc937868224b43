#!/usr/bin/env bash
# The real-GPU check: runs known_kernels both ways in and checks each profile with
# check_profile.py (kernels found, time ratios 1:2:4 within 5%, every launch joined).
#   (a) dormant-agent gpu -- known_kernels: started with the library injected, profiled to its end;
#   (b) heartbeat mode: known_kernels already runs with the library injected (dormant); a start
#       command with profiler_configs.gpu attaches to it, a stop detaches; it runs on unharmed.
# Usage: run_checks.sh BIN OUT, where BIN holds dormant-agent, libdormant_profilers.so,
# libdormant_cupti.so, dormant-server and known_kernels (and lib/, libraries they need that the
# machine lacks). Exits 77 (skipped) where there is no GPU, 1 when a check fails.
set -uo pipefail
bin=$(realpath "$1")
out=$(realpath -m "$2")
here=$(dirname "$(realpath "$0")")
mkdir -p "$out"
if ! nvidia-smi -L >/dev/null 2>&1; then
  echo "skipped: no GPU here (nvidia-smi -L found none)"
  exit 77
fi
nvidia-smi -L
export LD_LIBRARY_PATH=$bin/lib:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
failed=0

echo "== (a) dormant-agent gpu -- known_kernels"
rounds=300
if "$bin/dormant-agent" gpu -o "$out/launch" -f 1000 --gpu-mode merge -- \
  "$bin/known_kernels" --rounds $rounds >"$out/launch.log" 2>&1; then
  tail -n 5 "$out/launch.log"
  python3 "$here/check_profile.py" "$out/launch/last_profile.col" --launches $((3 * rounds)) ||
    failed=1
else
  echo "FAIL: dormant-agent gpu exited with $?"
  cat "$out/launch.log"
  failed=1
fi

echo "== (b) heartbeat mode, a start and a stop command against a running program"
work=$(mktemp -d)
port=18443
echo gpu-check-token >"$work/tokens"
chmod 600 "$work/tokens"
"$bin/dormant-server" --insecure-http --listen 127.0.0.1 --port $port --data-dir "$work/data" \
  --tokens-file "$work/tokens" >"$out/server.log" 2>&1 &
server=$!
CUDA_INJECTION64_PATH=$bin/libdormant_cupti.so "$bin/known_kernels" --until-file "$work/stop" \
  >"$out/program.log" 2>&1 &
program=$!
for _ in $(seq 100); do
  curl -s -o /dev/null "http://127.0.0.1:$port/api/v1/health_check" && break
  sleep 0.1
done
"$bin/dormant-agent" --enable-heartbeat-server --api-server "http://127.0.0.1:$port" \
  --token-file "$work/tokens" --service-name gpu --heartbeat-interval 1 -o "$out/heartbeat" \
  --state-dir "$work/agent" --host-lock "$work/agent.lock" >"$out/agent.log" 2>&1 &
agent=$!
request() {
  curl -s -H "Authorization: Bearer gpu-check-token" -d "$1" \
    "http://127.0.0.1:$port/api/metrics/profile_request"
  echo
}
host=$(hostname)
sleep 3
request '{"service_name":"gpu","request_type":"start","duration":4,"frequency":1000,"target_hosts":{"'"$host"'":null},"additional_args":{"profiler_configs":{"gpu":"gpu-only"}}}'
for _ in $(seq 60); do
  [[ -s $out/heartbeat/last_profile.col ]] && break
  sleep 0.5
done
request '{"service_name":"gpu","request_type":"stop","stop_level":"host","target_hosts":{"'"$host"'":null}}'
sleep 3
touch "$work/stop"
if wait $program; then
  echo "the program ran on to its end: $(tail -n 1 "$out/program.log")"
else
  echo "FAIL: the program failed after the session: $(tail -n 3 "$out/program.log")"
  failed=1
fi
kill $agent $server 2>/dev/null
wait $agent $server 2>/dev/null
grep -E "gpu:|session|error" "$out/agent.log" | tail -n 12
if [[ -s $out/heartbeat/last_profile.col ]]; then
  # Attached mid-run: the first round's launches may come before the records of kernels that
  # were already running, so only the ratios and the placement are strict here.
  python3 "$here/check_profile.py" "$out/heartbeat/last_profile.col" || failed=1
else
  echo "FAIL: the heartbeat session wrote no profile"
  failed=1
fi
rm -rf "$work"
exit $failed
