#!/usr/bin/env bash
# tests/bench/callgrind.sh: what the pressure layer and merged polls cost per request,
# in instructions (callgrind), which unlike wall time does not depend on who else uses
# the machine. See tests/bench/README.md ("pressure").
#
# usage: tests/bench/callgrind.sh [--out DIR]
#   CG_N1 (300) CG_N2 (1300): requests in the short and the long run of each variant
#   SLUICE_BIN, FAKEPROVIDER_BIN (default build/…)
# For each variant sluice runs under callgrind with 1 worker, twice: N1 and N2 requests
# (tests/bench/fixed.mjs, keep-alive). Instructions per request = (worker Ir of the long
# run - of the short run) / (N2 - N1): start-up, shutdown and warm-up cancel out.
# state.refresh_ms is 10 s and flush_ms 0 in these runs so timer work (per second, not
# per request) stays out of the difference; the level computation per tick is reported
# on its own, from a run at the default 50 ms. The layer's hooks on the request path are
# also counted function by function (inclusive), which does not depend on timing at all.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SLUICE_BIN=${SLUICE_BIN:-$ROOT/build/server/sluice}
FP_BIN=${FAKEPROVIDER_BIN:-$ROOT/build/tests/fakeprovider/fakeprovider}
N1=${CG_N1:-300}
N2=${CG_N2:-1300}
. "$HERE/cg_lib.sh"
cg_prologue "$0" 13 cg "valgrind node python3 curl" "$@"
FP_PID="" SL_PID=""
cleanup() {
    [ -n "$SL_PID" ] && kill -TERM "$SL_PID" 2>/dev/null
    [ -n "$FP_PID" ] && kill -TERM "$FP_PID" 2>/dev/null
    wait 2>/dev/null
    [ -n "${CG_KEEP:-}" ] && echo "kept $TMP" >&2 || rm -rf "$TMP"
}
trap cleanup EXIT

"$FP_BIN" --listen 127.0.0.1:0 --name cgup --quiet >"$TMP/fp.log" 2>&1 &
FP_PID=$!
for _ in $(seq 100); do grep -q 'listening on' "$TMP/fp.log" && break; sleep 0.05; done
UP=$(grep -Eo '[0-9.]+:[0-9]+$' "$TMP/fp.log") || die "fakeprovider did not start"

# run_once NAME NET_EXTRA REFRESH_MS METHOD N CONC -> prints the worker's Ir; keeps its file in $TMP/NAME-N
run_once() {
    local name=$1 extra=$2 refresh=$3 method=$4 n=$5 conc=$6
    local d="$TMP/$name-$n" flush=""
    # timer work (ticks, counter flushes) is per second, not per request: out of the
    # difference runs (refresh_ms 10 s, flush_ms 0), in the tick run
    [ "$refresh" -ge 10000 ] && flush=", flush_ms: 0"
    mkdir -p "$d"
    cat >"$d/s.yaml" <<EOF
server: { listen: "127.0.0.1:0", workers: 1, access_log: false, shutdown_grace_ms: 1000 }
admin: { listen: off }
state: { path: "$d/state", refresh_ms: $refresh$flush }
networks:
  eth:
    chain: ethereum
    ranking: { probe_interval_ms: 0 }
    ${extra:-# defaults}
    endpoints:
      - { id: up, url: "http://$UP" }
EOF
    cg_worker_run "$d" "$name" "$method" "$n" "$conc"
    local f=$CG_FILE
    awk '/^summary:/ { print $2 }' "$f"
}

fp_requests() { curl -s "http://$UP/_control/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])'; }

# variant NAME NET_EXTRA METHOD CONC -> prints Ir per request; the upstream
# requests per client request of the long run go to $TMP/NAME.upr
variant() {
    local a b r0 r1
    a=$(run_once "$1" "$2" 10000 "$3" "$N1" "$4") || exit 1
    r0=$(fp_requests)
    b=$(run_once "$1" "$2" 10000 "$3" "$N2" "$4") || exit 1
    r1=$(fp_requests)
    python3 -c "print(round(($r1 - $r0) / $N2, 3))" >"$TMP/$1.upr"
    python3 -c "print(round(($b - $a) / ($N2 - $N1)))"
}

log "callgrind: N1=$N1 N2=$N2 requests per run, 1 worker"
declare -A IR
IR[press]=$(variant press "" eth_blockNumber 1)
log "eth_blockNumber, pressure on: ${IR[press]} Ir/req"
IR[nopress]=$(variant nopress "pressure: { enabled: false }" eth_blockNumber 1)
log "eth_blockNumber, pressure off: ${IR[nopress]} Ir/req"
IR[merge]=$(variant merge "" eth_getTransactionReceipt 32)
log "eth_getTransactionReceipt c=32, merge window 2 ms: ${IR[merge]} Ir/req"
IR[nomerge]=$(variant nomerge "pressure: { merge_window_ms: 0 }" eth_getTransactionReceipt 32)
log "eth_getTransactionReceipt c=32, merge off: ${IR[nomerge]} Ir/req"
declare -A UPR=([merge]=$(cat "$TMP/merge.upr") [nomerge]=$(cat "$TMP/nomerge.upr"))

# incl FILE FN... -> "fn calls inclusive_Ir" for each function called anywhere in a
# callgrind file (names are compressed: "(id) name" the first time, "(id)" after)
incl() {
    python3 - "$@" <<'PY'
import re, sys
want = sys.argv[2:]
names, calls, cost = {}, {w: 0 for w in want}, {w: 0 for w in want}
cur, pending = None, None
for line in open(sys.argv[1]):
    m = re.match(r"^c?fn=\((\d+)\)(?: (.*))?$", line.strip())
    if m:
        if m.group(2):
            names[m.group(1)] = m.group(2)
        if line.startswith("cfn="):
            cur = names.get(m.group(1))
        continue
    if line.startswith("calls="):
        pending = (cur, int(line.split()[0][6:]))
        continue
    if pending:
        name, n = pending
        pending = None
        if name in calls:
            calls[name] += n
            cost[name] += int(line.split()[1])
for w in want:
    print(f"{w} {calls[w]} {cost[w]}")
PY
}

# The hooks the pressure layer adds to a request's path (the header and the
# shed check read pool_network_pressure), summed over the long run.
HOOKS=(pool_pressure_admit pool_pressure_settle pool_pressure_try pool_pressure_spent pool_merge_offer
       pool_merge_leave pool_call_wake_waiters pool_network_pressure)
HOOK_ROWS=$(incl "$(cat "$TMP/press-$N2/worker_file")" "${HOOKS[@]}")
HOOK_SUM=$(awk -v n="$N2" '{ s += $3 } END { printf "%d", s / n }' <<<"$HOOK_ROWS")
log "pressure hooks: $HOOK_SUM Ir per request (function-level, inclusive)"

# the level computation, per tick, at the default refresh (50 ms)
run_once tick "" 50 eth_blockNumber "$N1" 8 >/dev/null || exit 1
TICK=$(incl "$(cat "$TMP/tick-$N1/worker_file")" pool_pressure_read pool_pressure_tick pool_pressure_flush on_tick)

{
    echo "### Pressure layer and merged polls, in instructions (callgrind, 1 worker)"
    echo
    echo "**The pressure layer on a request's path (eth_blockNumber, idle: level ok), per request**,"
    echo "from the function-level inclusive counts of the run of $N2 requests (deterministic):"
    echo
    echo "| hook | calls | Ir per request |"
    echo "|---|---:|---:|"
    while read -r fn n ir; do [ -n "$fn" ] && echo "| $fn | $n | $((ir / N2)) |"; done <<<"$HOOK_ROWS"
    echo "| **total** | | **$HOOK_SUM** |"
    echo
    echo "**Whole worker, per request**: its instructions over $N2 requests minus over $N1, divided by"
    echo "$((N2 - N1)) (state.refresh_ms 10 s, flush_ms 0: timer work left out; it is per tick, below)."
    echo "These include the event loop's batching, which depends on timing: some noise."
    echo
    echo "| variant | Ir/request | vs its pair |"
    echo "|---|---:|---:|"
    echo "| eth_blockNumber c=1, pressure on (default) | ${IR[press]} | $((IR[press] - IR[nopress])) |"
    echo "| eth_blockNumber c=1, pressure.enabled: false | ${IR[nopress]} | — |"
    echo "| eth_getTransactionReceipt c=32, merge_window_ms: 2 (default) | ${IR[merge]} | $((IR[merge] - IR[nomerge])) |"
    echo "| eth_getTransactionReceipt c=32, merge_window_ms: 0 | ${IR[nomerge]} | — |"
    echo
    echo "Upstream HTTP requests per receipt poll in the long runs: merge ${UPR[merge]}, no merge ${UPR[nomerge]}."
    echo
    echo "**Timer work** at the default state.refresh_ms (50 ms), inclusive, per call:"
    echo
    echo "| function | calls | Ir per call |"
    echo "|---|---:|---:|"
    while read -r fn n ir; do [ -n "$fn" ] && [ "$n" != 0 ] && echo "| $fn | $n | $((ir / n)) |"; done <<<"$TICK"
    echo
} | tee "$OUT/callgrind.md"
