#!/usr/bin/env bash
# tests/bench/callgrind_keys.sh: what a key's scope costs per request (issue 33), in
# instructions of the whole worker (callgrind, 1 worker), which unlike wall time does not
# depend on who else uses the machine: the same eth_call (its `to` listed) from the same
# key, unscoped, then scoped with methods (allow and deny globs), contracts, origins (the
# calls carry a listed Origin) and per_address (a limit never reached).
#
# usage: tests/bench/callgrind_keys.sh [--out DIR]
#   CG_N1 (300) CG_N2 (2300): requests in the short and the long run of each case
#   CG_CONC (8): keep-alive client connections
#   SLUICE_BIN, FAKEPROVIDER_BIN (default build/…); CG_KEEP=1 keeps the callgrind files
# Instructions per request = (worker Ir of the long run - of the short run) / (N2 - N1):
# start-up, shutdown and warm-up cancel out. state.refresh_ms is 10 s, flush_ms 0 and
# probes off, so per-second timer work stays out of the difference.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SLUICE_BIN=${SLUICE_BIN:-$ROOT/build/server/sluice}
FP_BIN=${FAKEPROVIDER_BIN:-$ROOT/build/tests/fakeprovider/fakeprovider}
N1=${CG_N1:-300}
N2=${CG_N2:-2300}
CONC=${CG_CONC:-8}
. "$HERE/cg_lib.sh"
cg_prologue "$0" 14 cgkeys "valgrind node python3 sha256sum" "$@"
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

KEY=sl_benchkey0123456789abcdefgh
SHA=$(printf '%s' "$KEY" | sha256sum | cut -d' ' -f1)
ORIGIN=https://app.example
SCOPE='methods: { allow: ["eth_*", "net_version"], deny: ["eth_sendRawTransaction", "eth_sign*"] },
      contracts: ["0x00000000000000000000000000000000000000c0", "0x00000000000000000000000000000000000000c1"],
      origins: ["https://other.example", "https://app.example"], per_address: { per_second: 1000000 }'

# run_once NAME SCOPE N -> prints the worker's Ir
run_once() {
    local name=$1 scope=$2 n=$3
    local d="$TMP/$name-$n"
    mkdir -p "$d"
    cat >"$d/s.yaml" <<YAML
server: { listen: "127.0.0.1:0", workers: 1, access_log: false, shutdown_grace_ms: 1000 }
admin: { listen: off }
state: { path: "$d/state", refresh_ms: 10000, flush_ms: 0 }
tiers: { pro: {} }
keys:
  - { name: bench, sha256: "$SHA", tier: pro${scope:+, $scope} }
networks:
  eth:
    chain: ethereum
    ranking: { probe_interval_ms: 0 }
    endpoints:
      - { id: up, url: "http://$UP" }
YAML
    CG_URL_SUFFIX="/$KEY" FIXED_HEADERS="{\"origin\":\"$ORIGIN\"}" cg_worker_run "$d" "$name" eth_call "$n" "$CONC"
    grep -q 'non200=0' "$d/client.txt" || die "$name: calls refused: $(cat "$d/client.txt")"
    awk '/^summary:/ { print $2 }' "$CG_FILE"
}

log "callgrind: N1=$N1 N2=$N2 requests per run, c=$CONC, 1 worker"
declare -A IR
for variant in unscoped scoped; do
    scope=""
    [ "$variant" = scoped ] && scope=$SCOPE
    a=$(run_once "$variant" "$scope" "$N1") || exit 1
    b=$(run_once "$variant" "$scope" "$N2") || exit 1
    IR[$variant]=$(python3 -c "print(round(($b - $a) / ($N2 - $N1)))")
    log "$variant key: ${IR[$variant]} Ir/req"
done
{
    echo "### A key's scope, instructions per request (callgrind, 1 worker, c=$CONC, ($N2 - $N1) eth_call)"
    echo
    echo "| key | Ir/request |"
    echo "|---|---:|"
    echo "| unscoped | ${IR[unscoped]} |"
    echo "| scoped: methods, contracts, origins, per_address | ${IR[scoped]} |"
    python3 -c "u, s = ${IR[unscoped]}, ${IR[scoped]}; print(f'| scoped − unscoped | {s - u:+d} ({(s - u) * 100 / u:+.2f} %) |')"
} >"$OUT/callgrind_keys.md"
cat "$OUT/callgrind_keys.md"
