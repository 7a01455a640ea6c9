#!/usr/bin/env bash
# tests/bench/callgrind_req.sh: instructions per request of the whole worker (callgrind,
# 1 worker) for the 43-byte eth_blockNumber answer and the ~20 KB eth_getLogs answer, with
# the JSON access log off and on, and on with coalescing off (issue 15); and a response-cache
# hit (eth_chainId, coalescing off: every call is answered from the cache after the first)
# beside them (issue 23). Unlike wall time,
# the counts do not depend on who else uses the machine. See tests/bench/README.md.
#
# usage: tests/bench/callgrind_req.sh [--out DIR]
#   CG_N1 (500) CG_N2 (5500): requests in the short and the long run of each case
#   CG_CONC (8): keep-alive client connections  BENCH_LOGS (45: ~20 KB getLogs answer)
#   SLUICE_BIN, FAKEPROVIDER_BIN (default build/…); CG_KEEP=1 keeps the callgrind files
# Instructions per request = (worker Ir of the long run - of the short run) / (N2 - N1):
# start-up, shutdown and warm-up cancel out. state.refresh_ms is 10 s, flush_ms 0 and
# probes off, so per-second timer work stays out of the difference. For the long run the
# inclusive cost per request of the access log, the reply and the envelope scan are listed.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SLUICE_BIN=${SLUICE_BIN:-$ROOT/build/server/sluice}
FP_BIN=${FAKEPROVIDER_BIN:-$ROOT/build/tests/fakeprovider/fakeprovider}
N1=${CG_N1:-500}
N2=${CG_N2:-5500}
CONC=${CG_CONC:-8}
LOGS=${BENCH_LOGS:-45}
. "$HERE/cg_lib.sh"
cg_prologue "$0" 16 cgreq "valgrind node python3" "$@"
FP_PID="" SL_PID=""
cleanup() {
    [ -n "$SL_PID" ] && kill -TERM "$SL_PID" 2>/dev/null
    [ -n "$FP_PID" ] && kill -TERM "$FP_PID" 2>/dev/null
    wait 2>/dev/null
    [ -n "${CG_KEEP:-}" ] && echo "kept $TMP" >&2 || rm -rf "$TMP"
}
trap cleanup EXIT

"$FP_BIN" --listen 127.0.0.1:0 --name cgup --quiet --logs "$LOGS" >"$TMP/fp.log" 2>&1 &
FP_PID=$!
for _ in $(seq 100); do grep -q 'listening on' "$TMP/fp.log" && break; sleep 0.05; done
UP=$(grep -Eo '[0-9.]+:[0-9]+$' "$TMP/fp.log") || die "fakeprovider did not start"

# run_once NAME ACCESS_LOG METHOD N [MAX_WAITERS] -> prints the worker's Ir; its file name goes to
# $TMP/NAME-N/worker_file. MAX_WAITERS 0: coalescing off, every request goes upstream.
run_once() {
    local name=$1 alog=$2 method=$3 n=$4 waiters=${5:-64}
    local d="$TMP/$name-$n"
    mkdir -p "$d"
    cat >"$d/s.yaml" <<YAML
server: { listen: "127.0.0.1:0", workers: 1, access_log: $alog, shutdown_grace_ms: 1000 }
admin: { listen: off }
state: { path: "$d/state", refresh_ms: 10000, flush_ms: 0 }
networks:
  eth:
    chain: ethereum
    ranking: { probe_interval_ms: 0 }
    coalesce: { max_waiters: $waiters }
    endpoints:
      - { id: up, url: "http://$UP" }
YAML
    cg_worker_run "$d" "$name" "$method" "$n" "$CONC"
    local f=$CG_FILE
    if [ "$alog" = true ]; then
        local lines; lines=$(grep -c '"type":"access"' "$d/log")
        [ "$lines" = "$n" ] || die "$name: $lines access lines for $n requests"
    fi
    awk '/^summary:/ { print $2 }' "$f"
}

# incl FILE N FN... -> "fn Ir_per_request" (inclusive, summed over every call site)
incl() {
    python3 - "$@" <<'PY'
import re, sys
f, n, want = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
names, cost = {}, {w: 0 for w in want}
cur, pending = None, False
for line in open(f):
    m = re.match(r"^c?fn=\((\d+)\)(?: (.*))?$", line.strip())
    if m:
        if m.group(2):
            names[m.group(1)] = m.group(2)
        if line.startswith("cfn="):
            cur = names.get(m.group(1))
        continue
    if line.startswith("calls="):
        pending = True
        continue
    if pending:
        pending = False
        if cur in cost:
            cost[cur] += int(line.split()[1])
for w in want:
    print(f"{w} {cost[w] // n}")
PY
}

FNS=(gw_access_log sl_log_access sl_log_flush gw_reply_build wire_envelope_scan sl_http_send_parts on_call_done)
log "callgrind: N1=$N1 N2=$N2 requests per run, c=$CONC, 1 worker"
{
    echo "### Whole worker, instructions per request (callgrind, 1 worker, c=$CONC, ($N2 - $N1) requests)"
    echo
    echo "| case | Ir/request | $(IFS='|'; echo "${FNS[*]}" | sed 's/|/ | /g') |"
    echo "|---|---:|$(for _ in "${FNS[@]}"; do printf -- '---:|'; done)"
} >"$OUT/callgrind_req.md"
# the clients send the same call at once, so most are coalesced (answered from another's
# upstream answer); the third case of each method sends every one upstream
for method in eth_blockNumber eth_getLogs; do
    for variant in "false 64" "true 64" "true 0"; do
        read -r alog waiters <<<"$variant"
        name="$method-log$alog-w$waiters"
        label="$method, access_log $alog"
        [ "$waiters" = 0 ] && label="$label, coalescing off"
        a=$(run_once "$name" "$alog" "$method" "$N1" "$waiters") || exit 1
        b=$(run_once "$name" "$alog" "$method" "$N2" "$waiters") || exit 1
        per=$(python3 -c "print(round(($b - $a) / ($N2 - $N1)))")
        parts=$(incl "$(cat "$TMP/$name-$N2/worker_file")" "$N2" "${FNS[@]}" | awk '{ printf "| %s ", $2 }')
        log "$label: $per Ir/req"
        echo "| $label | $per $parts|" >>"$OUT/callgrind_req.md"
    done
done
# a cache hit, beside the 43-byte call sent upstream every time
name="eth_chainId-hit"
a=$(run_once "$name" true eth_chainId "$N1" 0) || exit 1
b=$(run_once "$name" true eth_chainId "$N2" 0) || exit 1
per=$(python3 -c "print(round(($b - $a) / ($N2 - $N1)))")
parts=$(incl "$(cat "$TMP/$name-$N2/worker_file")" "$N2" "${FNS[@]}" | awk '{ printf "| %s ", $2 }')
log "eth_chainId, access_log true, a response-cache hit: $per Ir/req"
echo "| eth_chainId, access_log true, a response-cache hit | $per $parts|" >>"$OUT/callgrind_req.md"
cat "$OUT/callgrind_req.md"
