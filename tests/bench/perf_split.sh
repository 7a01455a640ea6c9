#!/usr/bin/env bash
# tests/bench/perf_split.sh: where a worker's CPU goes on a real CPU (perf), kernel included,
# for the headline's small request with every request upstream: the split by object (kernel,
# sluice, libc, h2o, ...) and the top symbols. callgrind counts only user-space instructions;
# this says what share of the CPU they are (docs/performance.md, "where sluice's CPU goes").
#
# usage: tests/bench/perf_split.sh [SECONDS] [CONNS]     (default 8 s, c=64)
#   SLUICE_BIN, FAKEPROVIDER_BIN (default build/…); needs perf, wrk, curl, taskset.
# 1 worker, access log on, probes on, coalescing off, one fake upstream; sluice and the upstream
# on CPU 0, wrk on CPU 1. perf samples the worker only (perf_event_paranoid <= 2 is enough).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SLUICE_BIN=${SLUICE_BIN:-$ROOT/build/server/sluice}
FP_BIN=${FAKEPROVIDER_BIN:-$ROOT/build/tests/fakeprovider/fakeprovider}
SECS=${1:-8}
CONNS=${2:-64}
for t in perf wrk curl taskset; do
    command -v "$t" >/dev/null || { echo "perf_split.sh: $t is missing" >&2; exit 2; }
done
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-perf.XXXXXX")
FP_PID="" SL_PID=""
cleanup() {
    [ -n "$SL_PID" ] && kill -TERM "$SL_PID" 2>/dev/null
    [ -n "$FP_PID" ] && kill -TERM "$FP_PID" 2>/dev/null
    wait 2>/dev/null || true
    rm -rf "$TMP"
}
trap cleanup EXIT

taskset -c 0 "$FP_BIN" --listen 127.0.0.1:0 --name perfup --quiet >"$TMP/fp.log" 2>&1 &
FP_PID=$!
for _ in $(seq 100); do grep -q 'listening on' "$TMP/fp.log" && break; sleep 0.05; done
UP=$(grep -Eo '[0-9.]+:[0-9]+$' "$TMP/fp.log") || { echo "fakeprovider did not start" >&2; exit 1; }
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
cat >"$TMP/s.yaml" <<EOF
server: { listen: "127.0.0.1:$PORT", workers: 1, access_log: true }
admin: { listen: off }
state: { path: "$TMP/state" }
networks:
  eth:
    chain: ethereum
    coalesce: { max_waiters: 0 }
    endpoints:
      - { id: up, url: "http://$UP" }
EOF
taskset -c 0 "$SLUICE_BIN" --config "$TMP/s.yaml" 2>"$TMP/sluice.log" &
SL_PID=$!
BODY='{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}'
for _ in $(seq 100); do
    curl -sf -m 1 "http://127.0.0.1:$PORT/eth" -H 'Content-Type: application/json' -d "$BODY" >/dev/null && break
    sleep 0.1
done
WORKER=$(pgrep -P "$SL_PID" | head -1)
[ -n "$WORKER" ] || { echo "no worker process" >&2; exit 1; }

BENCH_METHOD=eth_blockNumber taskset -c 1 wrk -t1 -c"$CONNS" -d"$((SECS + 3))s" -s "$HERE/post.lua" \
    "http://127.0.0.1:$PORT/eth" >"$TMP/wrk.txt" 2>&1 &
WRK=$!
sleep 1.5
perf record -q -F 2000 -g -p "$WORKER" -o "$TMP/perf.data" -- sleep "$SECS" 2>/dev/null
wait "$WRK"
echo "## perf: the worker's samples by object (1 worker, 43 B, every request upstream, c=$CONNS, ${SECS} s)"
grep -E 'Requests/sec' "$TMP/wrk.txt"
perf report -i "$TMP/perf.data" --no-children --sort dso -g none 2>/dev/null | grep -E '^ +[0-9]' | head -8
echo "## top symbols"
perf report -i "$TMP/perf.data" --no-children --sort sym -g none 2>/dev/null | grep -E '^ +[0-9]' | head -25
