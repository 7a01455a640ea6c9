#!/usr/bin/env bash
# tests/bench/cluster.sh: what cluster: (several hosts through Redis) costs per request.
#
#   1. wrk, interleaved rounds: sluice (1 worker) without and with cluster:, each with
#      no client tier and with a tier on the caller's key (leases of 1,024 calls); the
#      sluice processes' CPU time per request (utime+stime / requests, master + worker),
#      and Redis commands per 1,000 client requests (sluice_cluster_redis_commands_total
#      and Redis' own INFO commandstats).
#   2. callgrind (1 worker, a fixed number of requests, twice: N1 and N2 calls, so the
#      start-up cancels out): instructions per request of the worker, cluster off vs on,
#      with the tier.
#
# usage: tests/bench/cluster.sh [--quick] [--no-callgrind] [--out DIR]
#   BENCH_SECONDS (5)  BENCH_ROUNDS (5)  BENCH_SERVER_CPU (0)  BENCH_WRK_CPU (1)
#   CG_N1 (2000)  CG_N2 (8000)  SLUICE_BIN, FAKEPROVIDER_BIN (default build/...)
# Needs wrk, redis-server, redis-cli, taskset, curl, node; valgrind for part 2.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SECS=${BENCH_SECONDS:-5}
ROUNDS=${BENCH_ROUNDS:-5}
SERVER_CPU=${BENCH_SERVER_CPU:-0}
WRK_CPU=${BENCH_WRK_CPU:-1}
CG_N1=${CG_N1:-2000}
CG_N2=${CG_N2:-8000}
SLUICE_BIN=${SLUICE_BIN:-$ROOT/build/server/sluice}
FP_BIN=${FAKEPROVIDER_BIN:-$ROOT/build/tests/fakeprovider/fakeprovider}
CALLGRIND=1
OUT=""
while [ $# -gt 0 ]; do
    case "$1" in
        --quick) SECS=2; ROUNDS=3; CG_N1=1000; CG_N2=4000 ;;
        --no-callgrind) CALLGRIND=0 ;;
        --out) OUT=$2; shift ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "cluster.sh: unknown argument $1" >&2; exit 2 ;;
    esac
    shift
done
die() { echo "cluster.sh: FATAL: $*" >&2; exit 1; }
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
for t in wrk redis-server redis-cli taskset curl node; do command -v "$t" >/dev/null || die "$t is not installed"; done
[ "$CALLGRIND" = 0 ] || command -v valgrind >/dev/null || die "valgrind is not installed (or --no-callgrind)"
[ -x "$SLUICE_BIN" ] && [ -x "$FP_BIN" ] || die "build sluice and fakeprovider first"

[ -n "$OUT" ] || OUT="$HERE/results/cluster-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT" || die "cannot create $OUT"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-cluster-bench.XXXXXX")
CLK_TCK=$(getconf CLK_TCK)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    sleep 0.5
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap cleanup EXIT INT TERM

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
KEY=sl_benchkey0a1b2c3d4e5f6a7b8c9d0e1f
KEYHASH=$(printf %s "$KEY" | sha256sum | cut -d' ' -f1)

# ---- the upstream and Redis ----
UP_PORT=$(free_port)
taskset -c "$SERVER_CPU" "$FP_BIN" --listen "127.0.0.1:$UP_PORT" --name up --quiet >/dev/null 2>&1 &
PIDS+=($!)
REDIS_PORT=$(free_port)
taskset -c "$SERVER_CPU" redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no \
    >"$TMP/redis.log" 2>&1 &
PIDS+=($!)
for _ in $(seq 1 50); do redis-cli -p "$REDIS_PORT" ping 2>/dev/null | grep -q PONG && break; sleep 0.1; done
redis_calls() { redis-cli -p "$REDIS_PORT" info commandstats | awk -F'[=,:]' '/^cmdstat_/ { s += $3 } END { print s + 0 }'; }

# ---- sluice, one per case ----
# config NAME CLUSTER(0/1) TIER(0/1) -> the file
config() {
    local f=$TMP/$1.yaml
    {
        echo "server: { listen: \"127.0.0.1:$2\", workers: 1, access_log: false }"
        echo "admin: { listen: \"127.0.0.1:$3\" }"
        echo "state: { path: \"$TMP/state-$1\" }"
        echo "log: { level: warn }"
        echo "networks:"
        echo "  eth:"
        echo "    ranking: { probe_interval_ms: 0 }"
        echo "    endpoints: [ { id: up, url: \"http://127.0.0.1:$UP_PORT\" } ]"
        if [ "$5" = 1 ]; then
            echo "tiers: { big: { per_second: 1000000, per_day: 4000000000 } }"
            echo "keys: [ { sha256: \"$KEYHASH\", tier: big, name: bench } ]"
        fi
        [ "$4" = 1 ] && echo "cluster: { redis: \"redis://127.0.0.1:$REDIS_PORT/0\", host: bench-${1//+/-} }"
    } >"$f"
    echo "$f"
}

declare -A PORT ADMIN MASTER
start() {   # name cluster tier
    local port admin
    port=$(free_port); admin=$(free_port)
    local f
    f=$(config "$1" "$port" "$admin" "$2" "$3")
    taskset -c "$SERVER_CPU" "$SLUICE_BIN" -c "$f" >"$TMP/$1.log" 2>&1 &
    MASTER[$1]=$!
    PIDS+=($!)
    PORT[$1]=$port
    ADMIN[$1]=$admin
    for _ in $(seq 1 100); do curl -s -m 1 "http://127.0.0.1:$admin/healthz" | grep -q ok && return 0; sleep 0.1; done
    die "sluice $1 did not start: $(tail -5 "$TMP/$1.log")"
}
ticks() {   # master pid -> utime+stime of the master and its workers
    local m=$1 t=0 p
    for p in $m $(cat "/proc/$m/task/$m/children" 2>/dev/null); do
        t=$((t + $(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$p/stat" 2>/dev/null || echo 0)))
    done
    echo "$t"
}
commands() { curl -s "http://127.0.0.1:${ADMIN[$1]}/metrics" | awk '/^sluice_cluster_redis_commands_total/ { s += $2 } END { print s + 0 }'; }

CASES="off off+tier on on+tier"
start off 0 0
start off+tier 0 1
start on 1 0
start on+tier 1 1
sleep 1.5 # the cluster links come up

url_of() { case "$1" in *tier) echo "http://127.0.0.1:${PORT[$1]}/eth/$KEY" ;; *) echo "http://127.0.0.1:${PORT[$1]}/eth" ;; esac; }

echo "case,round,requests,secs,us_per_req,sluice_commands,redis_commands,errors" >"$OUT/runs.csv"
log "wrk: $ROUNDS rounds x $SECS s per case, c=32, eth_blockNumber"
for c in $CASES; do taskset -c "$WRK_CPU" wrk -t1 -c32 -d1s -s "$HERE/post.lua" "$(url_of "$c")" >/dev/null 2>&1; done
cases=($CASES)
for r in $(seq 1 "$ROUNDS"); do
    for k in 0 1 2 3; do
        c=${cases[$(((k + r) % 4))]}
        t0=$(ticks "${MASTER[$c]}"); s0=$(commands "$c"); r0=$(redis_calls)
        line=$(taskset -c "$WRK_CPU" wrk -t1 -c32 -d"${SECS}s" -s "$HERE/post.lua" "$(url_of "$c")" 2>&1 | grep '^BENCH ')
        t1=$(ticks "${MASTER[$c]}"); s1=$(commands "$c"); r1=$(redis_calls)
        req=$(sed 's/.*requests=\([0-9]*\).*/\1/' <<<"$line")
        dur=$(sed 's/.*duration_us=\([0-9]*\).*/\1/' <<<"$line")
        err=$(awk '{ for (i = 2; i <= NF; i++) { split($i, a, "="); if (a[1] ~ /^(status|connect|read|write|timeout)$/) s += a[2] } print s + 0 }' <<<"$line")
        us=$(awk -v t="$((t1 - t0))" -v hz="$CLK_TCK" -v n="$req" 'BEGIN { printf "%.2f", n ? t / hz * 1e6 / n : 0 }')
        echo "$c,$r,$req,$(awk -v d="$dur" 'BEGIN { printf "%.2f", d / 1e6 }'),$us,$((s1 - s0)),$((r1 - r0)),$err" >>"$OUT/runs.csv"
        log "round $r $c: $req requests, $us us/request, $((s1 - s0)) commands from sluice, errors $err"
    done
done
for p in "${PIDS[@]:2}"; do kill "$p" 2>/dev/null; done

python3 - "$OUT/runs.csv" >"$OUT/summary.txt" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1])))
def med(case, key):
    return statistics.median(float(r[key]) for r in rows if r["case"] == case)
def per1000(case, key):
    req = sum(int(r["requests"]) for r in rows if r["case"] == case)
    return 1000.0 * sum(int(r[key]) for r in rows if r["case"] == case) / req if req else 0
print("| case | requests/s (median) | sluice CPU us/request (median) | Redis commands per 1,000 requests (sluice's count / Redis') | errors |")
print("|---|---|---|---|---|")
for c in ["off", "on", "off+tier", "on+tier"]:
    rps = statistics.median(int(r["requests"]) / float(r["secs"]) for r in rows if r["case"] == c)
    err = sum(int(r["errors"]) for r in rows if r["case"] == c)
    print(f"| {c} | {rps:.0f} | {med(c, 'us_per_req'):.2f} | {per1000(c, 'sluice_commands'):.2f} / {per1000(c, 'redis_commands'):.2f} | {err} |")
print()
print(f"cluster on - off, no tier: {med('on', 'us_per_req') - med('off', 'us_per_req'):+.2f} us/request")
print(f"cluster on - off, key tier: {med('on+tier', 'us_per_req') - med('off+tier', 'us_per_req'):+.2f} us/request")
PY
cat "$OUT/summary.txt"

[ "$CALLGRIND" = 1 ] || exit 0

# ---- callgrind: a fixed number of calls, twice ----
cat >"$TMP/send.mjs" <<'JS'
// node send.mjs URL N: N POSTs, 8 at a time, on kept-alive connections
import http from 'node:http';
const [url, n] = [process.argv[2], Number(process.argv[3])];
const agent = new http.Agent({ keepAlive: true, maxSockets: 8 });
const body = '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}';
let sent = 0, bad = 0;
async function one() {
  while (sent < n) {
    sent++;
    await new Promise((res) => {
      const r = http.request(url, { method: 'POST', agent, headers: { 'content-type': 'application/json' } }, (a) => {
        if (a.statusCode !== 200) bad++;
        a.resume(); a.on('end', res);
      });
      r.on('error', () => { bad++; res(); });
      r.end(body);
    });
  }
}
await Promise.all(Array.from({ length: 8 }, one));
agent.destroy();
if (bad) { console.error(`${bad} failed`); process.exit(1); }
JS
cg_run() {   # cluster(0/1) N -> instructions of the worker
    local name=cg-$1-$2 port admin f
    port=$(free_port); admin=$(free_port)
    f=$(config "$name" "$port" "$admin" "$1" 1)
    rm -rf "$TMP/cg-$name"; mkdir -p "$TMP/cg-$name"
    valgrind --tool=callgrind --trace-children=yes --callgrind-out-file="$TMP/cg-$name/out.%p" \
        "$SLUICE_BIN" -c "$f" >"$TMP/$name.log" 2>&1 &
    local m=$!
    for _ in $(seq 1 600); do curl -s -m 1 "http://127.0.0.1:$admin/healthz" | grep -q ok && break; sleep 0.2; done
    sleep 2
    node "$TMP/send.mjs" "http://127.0.0.1:$port/eth/$KEY" "$2" || log "callgrind run $name: some calls failed"
    kill "$m"; wait "$m" 2>/dev/null
    # the worker is the process that is not the master: the largest profile
    local best=0 f2 ir
    for f2 in "$TMP/cg-$name"/out.*; do
        ir=$(awk '/^summary:/ { print $2 }' "$f2")
        [ "${ir:-0}" -gt "$best" ] && best=$ir
    done
    echo "$best"
}
log "callgrind: $CG_N1 and $CG_N2 calls, cluster off and on (each run starts its own sluice)"
off1=$(cg_run 0 "$CG_N1"); off2=$(cg_run 0 "$CG_N2")
on1=$(cg_run 1 "$CG_N1"); on2=$(cg_run 1 "$CG_N2")
{
    echo
    echo "callgrind, 1 worker, the key's tier (leases of 1,024 calls), instructions of the worker:"
    awk -v a="$off1" -v b="$off2" -v c="$on1" -v d="$on2" -v n1="$CG_N1" -v n2="$CG_N2" 'BEGIN {
        off = (b - a) / (n2 - n1); on = (d - c) / (n2 - n1)
        printf "  cluster off: %.0f instructions/request (%d at %d calls, %d at %d)\n", off, a, n1, b, n2
        printf "  cluster on:  %.0f instructions/request (%d at %d calls, %d at %d)\n", on, c, n1, d, n2
        printf "  added: %+.0f instructions/request\n", on - off }'
} | tee -a "$OUT/summary.txt"
