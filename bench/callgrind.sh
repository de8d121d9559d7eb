#!/usr/bin/env bash
# Instructions per request of one Tollgate binary, counted by valgrind's callgrind: numbers this
# machine's load does not move (wall-clock sweeps do), for before/after comparisons of a change
# on the request path.
#
#   bench/callgrind.sh TOLLGATE_BIN [forwarding|governed] [REQUESTS]
#
# Starts the mock (1 ms delay) and TOLLGATE_BIN under callgrind with one worker
# (`--num_workers 1`) on the bench config (bench/configs/tollgate.yaml, SQLite in a temp dir),
# sends 300 warm-up requests, zeroes the counters, sends REQUESTS (default 3000) at
# concurrency 4 (CALLGRIND_C to change it) with `tollgate-bench load`, dumps, and prints the whole process's instructions
# divided by REQUESTS, and the serving thread's alone (the request path). "governed" sends them with a virtual key made with a budget and TPM/RPM
# limits (the harness's governed scenario); "forwarding" with the master key.
#
# Needs valgrind, and release builds of tollgate-mock and tollgate-bench in target/release
# (or TOLLGATE_MOCK_BIN / TOLLGATE_BENCH_BIN). Every process it starts is stopped by PID.
set -euo pipefail
cd "$(dirname "$0")/.."

bin=${1:?usage: bench/callgrind.sh TOLLGATE_BIN [forwarding|governed] [REQUESTS]}
scenario=${2:-forwarding}
requests=${3:-3000}
mock_bin=${TOLLGATE_MOCK_BIN:-target/release/tollgate-mock}
bench_bin=${TOLLGATE_BENCH_BIN:-target/release/tollgate-bench}
master=sk-bench-master

dir=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  [ -n "${CALLGRIND_KEEP:-}" ] && cp -r "$dir" "$CALLGRIND_KEEP"
  rm -rf "$dir"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_http() { # any HTTP answer
  for _ in $(seq 1 600); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$1")" != 000 ] && return 0
    sleep 0.1
  done
  echo "no answer from $1" >&2
  return 1
}

mock_port=$(free_port)
"$mock_bin" --port "$mock_port" --delay-ms 1 --no-record >"$dir/mock.log" 2>&1 &
pids+=($!)
wait_http "http://127.0.0.1:$mock_port/v1/models"

sed "s#{upstream}#http://127.0.0.1:$mock_port#" bench/configs/tollgate.yaml >"$dir/config.yaml"
printf '  database_url: "sqlite://%s/bench.db"\n' "$dir" >>"$dir/config.yaml"
port=$(free_port)
RUST_LOG=warn valgrind --tool=callgrind --separate-threads=yes --callgrind-out-file="$dir/callgrind.out" \
  "$bin" --config "$dir/config.yaml" --port "$port" --host 127.0.0.1 --num_workers 1 \
  >"$dir/gateway.log" 2>&1 &
cg=$!
pids+=($cg)
wait_http "http://127.0.0.1:$port/health/liveliness"

key=$master
if [ "$scenario" = governed ]; then
  key=$(curl -fs "http://127.0.0.1:$port/key/generate" -H "Authorization: Bearer $master" \
    -H 'Content-Type: application/json' \
    -d '{"models": ["bench-gpt"], "max_budget": 1000000.0, "budget_duration": "30d", "tpm_limit": 1000000000000, "rpm_limit": 100000000}' |
    python3 -c 'import json, sys; print(json.load(sys.stdin)["key"])')
fi

load() {
  "$bench_bin" load --url "http://127.0.0.1:$port" -c "${CALLGRIND_C:-4}" --duration 600 --max-requests "$1" \
    -H "authorization: Bearer $key" >"$dir/load-$1.json"
}
load 300
callgrind_control -z "$cg" >/dev/null 2>&1
load "$requests"
callgrind_control -d "$cg" >/dev/null 2>&1
sleep 1
# One file per thread (--separate-threads). The serving worker is the thread that ran the
# most; the rest are the main thread (write-behind, timers) and SQLite's worker threads, whose
# counts follow how many batches the run's wall time cut, so they move with the machine's load.
total=0
serving=0
for f in "$dir"/callgrind.out*; do
  n=$(awk '/^summary:/ {print $2}' "$f")
  n=${n:-0}
  [ -n "${CALLGRIND_THREADS:-}" ] && echo "$(basename "$f"): $n" >&2
  total=$((total + n))
  [ "$n" -gt "$serving" ] && serving=$n
done
python3 - "$total" "$serving" "$requests" "$scenario" "$bin" <<'PY'
import sys
total, serving, n = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
scenario, binary = sys.argv[4], sys.argv[5]
print(f"{scenario}: serving thread {serving / n:,.0f}, whole process {total / n:,.0f} instructions per request ({n} requests, {binary})")
PY
