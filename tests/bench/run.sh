#!/usr/bin/env bash
# tests/bench/run.sh: sluice vs nginx vs a direct upstream, measured side by side with wrk in
# interleaved rounds, plus worker RSS under 1,000 keep-alive clients and two failure cases
# (a refused first endpoint, a rate-limited first endpoint), and what the pressure layer and
# merged polls cost (with callgrind instruction counts), and answers from the response cache.
# The headline is sluice with coalescing off (every request upstream, as through nginx),
# a key required and a scoped key presented on every request.
# See tests/bench/README.md.
#
# usage: tests/bench/run.sh [--quick] [--build] [--out DIR] [--phases main,cache,features,pressure,refused,429,hung,rss]
#   BENCH_SECONDS (5)  BENCH_ROUNDS (5)  BENCH_LOGS (45: eth_getLogs answer of ~20 KB)
#   BENCH_RSS_CONNS (1000)  BENCH_RSS_SECONDS (6)  BENCH_SERVER_CPU (0)  BENCH_WRK_CPU (1)
#   SLUICE_BIN, FAKEPROVIDER_BIN (default build/…)
# Exit status: 0 when every run completed with no wrk error and no non-2xx answer, 1 otherwise.
set -uo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
SECONDS_PER_RUN=${BENCH_SECONDS:-5}
ROUNDS=${BENCH_ROUNDS:-5}
LOGS=${BENCH_LOGS:-45}
RSS_CONNS=${BENCH_RSS_CONNS:-1000}
RSS_SECONDS=${BENCH_RSS_SECONDS:-6}
SERVER_CPU=${BENCH_SERVER_CPU:-0}
WRK_CPU=${BENCH_WRK_CPU:-1}
SLUICE_BIN=${SLUICE_BIN:-$ROOT/build/server/sluice}
FP_BIN=${FAKEPROVIDER_BIN:-$ROOT/build/tests/fakeprovider/fakeprovider}
OUT=""
PHASES="main,cache,features,pressure,refused,429,hung,rss"
BUILD=0

while [ $# -gt 0 ]; do
    case "$1" in
        --quick) SECONDS_PER_RUN=2; ROUNDS=2; RSS_SECONDS=3 ;;
        --build) BUILD=1 ;;
        --out) OUT=$2; shift ;;
        --phases) PHASES=$2; shift ;;
        -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "run.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
    esac
    shift
done

die() { echo "run.sh: FATAL: $*" >&2; exit 1; }
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
has_phase() { [[ ",$PHASES," == *",$1,"* ]]; }

for tool in wrk nginx taskset curl python3 awk ss sha256sum; do
    command -v "$tool" >/dev/null || die "$tool is not installed"
done
[ "$(nproc)" -ge 2 ] || log "warning: fewer than 2 CPUs; pinning servers and wrk apart is impossible"
if [ "$BUILD" = 1 ]; then
    (cd "$ROOT" && cmake -S . -B build >/dev/null && cmake --build build -j2 --target sluice fakeprovider) \
        || die "build failed"
fi
[ -x "$SLUICE_BIN" ] || die "no $SLUICE_BIN (build it, or pass --build)"
[ -x "$FP_BIN" ] || die "no $FP_BIN (build it, or pass --build)"

# 1,000 keep-alive clients need descriptors in wrk and in the servers (they inherit this)
want=$((RSS_CONNS * 2 + 1024))
if [ "$(ulimit -n)" != unlimited ] && [ "$(ulimit -n)" -lt "$want" ]; then
    ulimit -n "$want" 2>/dev/null || ulimit -n "$(ulimit -Hn)" 2>/dev/null
fi
[ "$(ulimit -n)" = unlimited ] || [ "$(ulimit -n)" -gt $((RSS_CONNS + 64)) ] \
    || die "ulimit -n is $(ulimit -n), too low for $RSS_CONNS connections (raise the hard limit)"

[ -n "$OUT" ] || OUT="$HERE/results/$(date +%Y%m%d-%H%M%S)"
mkdir -p "$OUT/raw" || die "cannot create $OUT"
OUT=$(cd "$OUT" && pwd)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench.XXXXXX") || die "mktemp failed"
CLK_TCK=$(getconf CLK_TCK)
FAILS=0
CSV="$OUT/runs.csv"
RSS_CSV="$OUT/rss.csv"

# ---------------------------------------------------------------- processes and cleanup

PIDS=()          # every server process this script started (masters), in start order
WRK_BG=""        # a wrk running in the background (RSS phase)

cleanup() {
    local rc=$?
    trap - EXIT INT TERM
    [ -n "$WRK_BG" ] && kill "$WRK_BG" 2>/dev/null
    local kids=()
    for p in "${PIDS[@]}"; do
        kids+=($(cat "/proc/$p/task/$p/children" 2>/dev/null))
        kill -TERM "$p" 2>/dev/null
    done
    # give sluice (shutdown_grace_ms) and nginx a moment, then make sure
    for _ in $(seq 30); do
        local alive=0
        for p in "${PIDS[@]}" "${kids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
        [ "$alive" = 0 ] && break
        sleep 0.1
    done
    for p in "${PIDS[@]}" "${kids[@]}"; do kill -KILL "$p" 2>/dev/null; done
    wait 2>/dev/null
    # keep the servers' logs (the access log was truncated after use)
    cp "$TMP"/*.log "$OUT/" 2>/dev/null
    [ -f "$TMP/nginx/error.log" ] && cp "$TMP/nginx/error.log" "$OUT/nginx-error.log"
    rm -rf "$TMP"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# snapshot the binaries: other people may rebuild build/ while this runs, and every server
# started later (failure phases) must run the same build as the first ones
mkdir -p "$TMP/bin"
SLUICE_SRC=$SLUICE_BIN FP_SRC=$FP_BIN
cp "$SLUICE_BIN" "$TMP/bin/sluice" && cp "$FP_BIN" "$TMP/bin/fakeprovider" || die "cannot copy the binaries"
SLUICE_BIN=$TMP/bin/sluice FP_BIN=$TMP/bin/fakeprovider
"$SLUICE_BIN" --version >/dev/null 2>&1 || die "$SLUICE_SRC does not run (being rebuilt? try again)"

# start_server NAME LOGFILE CMD... : runs CMD pinned to the server CPU, in the background
start_server() {
    local name=$1 logf=$2; shift 2
    taskset -c "$SERVER_CPU" "$@" >>"$logf" 2>&1 &
    local pid=$!
    PIDS+=("$pid")
    eval "PID_$name=$pid"
}

wait_for_line() {  # wait_for_line FILE REGEX PID -> prints the first matching line
    for _ in $(seq 200); do
        if grep -Eq "$2" "$1" 2>/dev/null; then grep -Em1 "$2" "$1"; return 0; fi
        kill -0 "$3" 2>/dev/null || { cat "$1" >&2; return 1; }
        sleep 0.05
    done
    cat "$1" >&2
    return 1
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# start_fake NAME ARGS... -> sets PORT_NAME, PID_NAME
start_fake() {
    local name=$1; shift
    start_server "$name" "$TMP/$name.log" "$FP_BIN" --listen 127.0.0.1:0 --name "$name" --quiet \
        --logs "$LOGS" "$@"
    local pid; eval "pid=\$PID_$name"
    local line; line=$(wait_for_line "$TMP/$name.log" 'listening on' "$pid") \
        || die "fakeprovider $name did not start"
    eval "PORT_$name=${line##*:}"
}

# start_sluice NAME ACCESS_LOG(true|false) URL... -> sets PORT_NAME, PID_NAME
# Optional globals for variants: STATE_EXTRA (", flush_ms: 0"), EP_EXTRA
# (", credits: {...}"), TOP_EXTRA (a top-level YAML line such as "tiers: ..."),
# NET_EXTRA (a line of the network, such as "ranking: {...}").
start_sluice() {
    local name=$1 alog=$2; shift 2
    local conf="$OUT/$name.yaml"
    {
        echo "# generated by tests/bench/run.sh"
        # one load generator on one address: the per-address share (a quarter)
        # would refuse most of the RSS run's connections
        echo "server: { listen: \"127.0.0.1:0\", workers: 2, access_log: $alog, shutdown_grace_ms: 1000, max_connections_per_address: 1024 }"
        echo "admin: { listen: off }"
        echo "state: { path: \"$TMP/state-$name\"${STATE_EXTRA:-} }"
        [ -n "${TOP_EXTRA:-}" ] && echo "$TOP_EXTRA"
        echo "networks:"
        echo "  eth:"
        echo "    chain: ethereum"
        [ -n "${NET_EXTRA:-}" ] && echo "    $NET_EXTRA"
        echo "    endpoints:"
        local i=0
        for u in "$@"; do echo "      - { id: e$i, url: \"$u\"${EP_EXTRA:-} }"; i=$((i + 1)); done
    } >"$conf"
    # O_APPEND, so run.sh can truncate the access log between runs
    start_server "$name" "$TMP/$name.log" "$SLUICE_BIN" -c "$conf"
    local pid; eval "pid=\$PID_$name"
    local line; line=$(wait_for_line "$TMP/$name.log" 'listening on http://' "$pid") \
        || die "sluice $name did not start (config $conf)"
    line=$(grep -Eo 'listening on http://[0-9.]+:[0-9]+' <<<"$line")
    eval "PORT_$name=${line##*:}"
}

# start_nginx NAME UP1 UP2 [UP3] [log] -> sets PORT_NAME, PID_NAME
# (three upstreams: nginx-hung.conf.in, the hung-upstream phase's failover
# proxy; "log" turns its access log on, buffered like sluice's)
start_nginx() {
    local name=$1 up1=$2 up2=$3 up3="" alog="access_log off;"
    shift 3
    for a in "$@"; do
        if [ "$a" = log ]; then alog="access_log $TMP/$name/access.log combined buffer=64k flush=100ms;"; else up3=$a; fi
    done
    local dir="$TMP/$name" port; port=$(free_port)
    mkdir -p "$dir"
    local user_line="# (not root: nginx runs as the invoking user)"
    [ "$(id -u)" = 0 ] && user_line="user $(id -un) $(id -gn);   # root: keep workers as the invoking user"
    local tmpl="$HERE/nginx.conf.in"
    [ -n "$up3" ] && tmpl="$HERE/nginx-hung.conf.in"
    sed -e "s|@PREFIX@|$dir|g" -e "s|@LISTEN@|127.0.0.1:$port|" -e "s|@UP1@|$up1|" -e "s|@UP2@|$up2|" \
        -e "s|@UP3@|$up3|" -e "s|@USER_LINE@|$user_line|" -e "s|@ACCESS_LOG@|$alog|" "$tmpl" >"$dir/nginx.conf"
    cp "$dir/nginx.conf" "$OUT/$name.conf"
    start_server "$name" "$TMP/$name.log" nginx -p "$dir/" -e "$dir/error.log" -c "$dir/nginx.conf"
    local pid; eval "pid=\$PID_$name"
    for _ in $(seq 100); do
        curl -s -o /dev/null -m 1 "http://127.0.0.1:$port/" && break
        kill -0 "$pid" 2>/dev/null || { cat "$TMP/$name.log" "$dir/error.log" >&2; die "nginx did not start"; }
        sleep 0.05
    done
    eval "PORT_$name=$port"
}

children() { cat "/proc/$1/task/$1/children" 2>/dev/null; }

# cpu_ticks PID... -> utime+stime summed (clock ticks); a vanished pid counts 0
cpu_ticks() {
    local sum=0 p t
    for p in "$@"; do
        t=$(awk '{ sub(/^.*\) /, ""); print $12 + $13 }' "/proc/$p/stat" 2>/dev/null) || t=0
        sum=$((sum + ${t:-0}))
    done
    echo "$sum"
}

# every pid this script started, with their workers (to subtract our own CPU from the machine's)
all_our_pids() {
    local p
    for p in "${PIDS[@]}"; do echo "$p"; children "$p"; done
}

# /proc/stat "cpu" line: prints "user+nice+system steal" (ticks)
machine_ticks() { awk '/^cpu / { print $2 + $3 + $4, $9 }' /proc/stat; }

rpc_body() {
    case "$1" in
        eth_blockNumber) echo '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}' ;;
        eth_getLogs) echo '{"jsonrpc":"2.0","id":1,"method":"eth_getLogs","params":[{"fromBlock":"0xf4200","toBlock":"latest"}]}' ;;
        eth_getTransactionReceipt) echo '{"jsonrpc":"2.0","id":1,"method":"eth_getTransactionReceipt","params":["0x1111111111111111111111111111111111111111111111111111111111111111"]}' ;;
        eth_chainId) echo '{"jsonrpc":"2.0","id":1,"method":"eth_chainId","params":[]}' ;;
        eth_sendRawTransaction) echo '{"jsonrpc":"2.0","id":1,"method":"eth_sendRawTransaction","params":["0x00"]}' ;;
    esac
}

# key_header NAME -> curl's arguments presenting NAME's key (KEY_OF), none if it has none
key_header() { [ -n "${KEY_OF[$1]:-}" ] && printf '%s\n' -H "X-API-Key: ${KEY_OF[$1]}"; }

# probe NAME URL METHOD: one request must come back 200 with a JSON-RPC result
probe() {
    local name=$1 url=$2 method=$3 body code size hdr
    mapfile -t hdr < <(key_header "$name")
    body=$(curl -s -m 5 -o "$TMP/probe.out" -w '%{http_code} %{size_download}' "$url" ${hdr[@]+"${hdr[@]}"} \
        -H 'Content-Type: application/json' -d "$(rpc_body "$method")") || true
    code=${body%% *}; size=${body##* }
    if [ "$code" != 200 ] || ! grep -q '"result":' "$TMP/probe.out"; then
        die "probe of $name ($url, $method) failed: HTTP $code, body: $(head -c 300 "$TMP/probe.out")"
    fi
    if [ "$method" = eth_getLogs ] && [ "$size" -lt 10000 ]; then
        die "probe of $name: eth_getLogs answer is only $size bytes (BENCH_LOGS=$LOGS)"
    fi
    log "probe ok: $name $method -> $size bytes"
}

# check_key NAME URL: NAME requires a key and holds KEY_OF[NAME] to its scope: a call
# without the key must be refused 401 key_required, one outside the scope 403
# method_not_allowed (a benchmark of a key that is not checked would measure nothing)
check_key() {
    local name=$1 url=$2 code hdr
    mapfile -t hdr < <(key_header "$name")
    code=$(curl -s -m 5 -o "$TMP/key.out" -w '%{http_code}' "$url" -H 'Content-Type: application/json' \
        -d "$(rpc_body eth_blockNumber)") || true
    [ "$code" = 401 ] && grep -q '"reason":"key_required"' "$TMP/key.out" \
        || die "$name: a call without the key was not refused 401 key_required: HTTP $code, body: $(head -c 300 "$TMP/key.out")"
    code=$(curl -s -m 5 -o "$TMP/key.out" -w '%{http_code}' "$url" ${hdr[@]+"${hdr[@]}"} \
        -H 'Content-Type: application/json' -d "$(rpc_body eth_sendRawTransaction)") || true
    [ "$code" = 403 ] && grep -q '"reason":"method_not_allowed"' "$TMP/key.out" \
        || die "$name: the key's scope let eth_sendRawTransaction through: HTTP $code, body: $(head -c 300 "$TMP/key.out")"
    log "key check ok: $name refuses a call without the key (401) and one outside its scope (403)"
}

fp_requests() {  # fp_requests PORT -> the provider's request counter
    curl -s -m 5 "http://127.0.0.1:$1/_control/stats" | python3 -c 'import json,sys; print(json.load(sys.stdin)["requests"])'
}

echo "phase,target,workload,conc,round,requests,secs,rps,p50_us,p90_us,p99_us,max_us,status_err,connect_err,read_err,write_err,timeout_err,bytes_per_resp,proxy_us_per_req,upstream_us_per_req,other_cpu_pct,steal_pct,respawned,up_requests,first_ep_requests,log_bytes" >"$CSV"

# measure PHASE TARGET WORKLOAD CONC ROUND URL PROXY_PID UPSTREAM_PORTS(comma) FIRST_EP_PORT LOGFILE
#   PROXY_PID: master (its workers are added); for "direct" the upstream itself
measure() {
    local phase=$1 target=$2 wl=$3 conc=$4 round=$5 url=$6 ppid=$7 upports=$8 firstport=$9 logfile=${10}
    local raw="$OUT/raw/$phase-$target-$wl-c$conc-r$round.txt"
    local pp=("$ppid" $(children "$ppid"))
    local kids_before; kids_before=$(children "$ppid" | tr ' ' '\n' | sort | tr '\n' ' ')
    local up_pids=() up_reqs0=0 first0=0 p
    if [ "$target" != direct ]; then
        for p in ${upports//,/ }; do
            local var; var=$(port_to_pid "$p"); up_pids+=("$var")
            up_reqs0=$((up_reqs0 + $(fp_requests "$p")))
        done
        [ -n "$firstport" ] && first0=$(fp_requests "$firstport")
    fi
    [ -n "$logfile" ] && : >"$logfile"
    local ours_all; ours_all=($(all_our_pids))
    local m0 s0 o0 pt0 ut0
    read -r m0 s0 < <(machine_ticks)
    o0=$(cpu_ticks "${ours_all[@]}")
    pt0=$(cpu_ticks "${pp[@]}")
    ut0=$(cpu_ticks "${up_pids[@]}")
    local TIMEFORMAT='%3U %3S'
    { time BENCH_METHOD=$wl BENCH_API_KEY=${KEY_OF[$target]:-} taskset -c "$WRK_CPU" wrk -t1 -c"$conc" -d"${SECONDS_PER_RUN}s" --latency ${WRK_EXTRA:-} \
        -s "$HERE/post.lua" "$url" >"$raw" 2>&1 ; } 2>"$TMP/wrk.time"
    local pt1 ut1 o1 m1 s1
    pt1=$(cpu_ticks "${pp[@]}")
    ut1=$(cpu_ticks "${up_pids[@]}")
    o1=$(cpu_ticks "${ours_all[@]}")
    read -r m1 s1 < <(machine_ticks)
    local up_reqs1=0 first1=0 log_bytes=""
    if [ "$target" != direct ]; then
        for p in ${upports//,/ }; do up_reqs1=$((up_reqs1 + $(fp_requests "$p"))); done
        [ -n "$firstport" ] && first1=$(fp_requests "$firstport")
    fi
    [ -n "$logfile" ] && log_bytes=$(stat -c %s "$logfile")
    for p in "$ppid" "${up_pids[@]}"; do
        kill -0 "$p" 2>/dev/null || die "process $p ($target or its upstream) is gone after $raw"
    done
    local kids_after; kids_after=$(children "$ppid" | tr ' ' '\n' | sort | tr '\n' ' ')
    local respawned=0
    if [ "$kids_before" != "$kids_after" ]; then
        respawned=1
        log "!! $target: worker processes changed during the run ($kids_before -> $kids_after): a crash?"
        FAILS=$((FAILS + 1))
    fi
    local line; line=$(grep '^BENCH ' "$raw")
    [ -n "$line" ] || { cat "$raw" >&2; die "wrk printed no BENCH line ($raw)"; }
    local wrk_cpu; wrk_cpu=$(awk '{ print $1 + $2 }' "$TMP/wrk.time")
    local row
    row=$(awk -v line="$line" -v phase="$phase" -v target="$target" -v wl="$wl" -v conc="$conc" \
        -v round="$round" -v pt="$((pt1 - pt0))" -v ut="$((ut1 - ut0))" -v tck="$CLK_TCK" \
        -v mach="$((m1 - m0))" -v steal="$((s1 - s0))" -v ours="$((o1 - o0))" -v wrkcpu="$wrk_cpu" \
        -v ncpu="$(nproc)" -v respawned="$respawned" -v upr="$((up_reqs1 - up_reqs0))" \
        -v first="$((first1 - first0))" -v hasfirst="$([ -n "$firstport" ] && echo 1 || echo 0)" -v logb="$log_bytes" -v direct="$([ "$target" = direct ] && echo 1 || echo 0)" '
        BEGIN {
            n = split(line, kv, " ")
            for (i = 2; i <= n; i++) { split(kv[i], a, "="); v[a[1]] = a[2] }
            secs = v["duration_us"] / 1e6
            req = v["requests"]
            rps = secs > 0 ? req / secs : 0
            bpr = req > 0 ? v["bytes"] / req : 0
            pus = req > 0 ? pt * 1e6 / tck / req : 0
            uus = (req > 0 && !direct) ? ut * 1e6 / tck / req : ""
            # CPU used on the machine by anything but our servers and wrk, as a % of one CPU
            other = secs > 0 ? ((mach - ours) / tck - wrkcpu) / secs * 100 : 0
            if (other < 0) other = 0
            stealp = secs > 0 ? steal / tck / secs * 100 : 0
            printf "%s,%s,%s,%d,%d,%d,%.3f,%.1f,%d,%d,%d,%d,%d,%d,%d,%d,%d,%.0f,%.2f,%s,%.1f,%.1f,%d,%s,%s,%s\n",
                phase, target, wl, conc, round, req, secs, rps, v["p50_us"], v["p90_us"], v["p99_us"], v["max_us"],
                v["status"], v["connect"], v["read"], v["write"], v["timeout"], bpr, pus,
                (uus == "" ? "" : sprintf("%.2f", uus)), other, stealp, respawned,
                (direct ? "" : upr), (hasfirst ? first : ""), logb
        }')
    echo "$row" >>"$CSV"
    local st co rd wr to
    IFS=, read -r _ _ _ _ _ _ _ _ _ _ _ _ st co rd wr to _ <<<"$row"
    if [ "$st" != 0 ] || [ "$co" != 0 ] || [ "$rd" != 0 ] || [ "$wr" != 0 ] || [ "$to" != 0 ]; then
        log "!! FAIL $phase $target $wl c=$conc round $round: non-2xx=$st connect=$co read=$rd write=$wr timeout=$to (see $raw)"
        FAILS=$((FAILS + 1))
    fi
    log "$(awk -F, '{ printf "%-7s %-9s %-15s c=%-3s r%s %8.0f req/s  p50 %.2f ms  p99 %.2f ms  %.1f us/req  other load %.0f%%",
        $1, $2, $3, $4, $5, $8, $9 / 1000, $11 / 1000, $19, $21 }' <<<"$row")"
}

declare -A PORT_PID=()
declare -A KEY_OF=()   # target -> the API key wrk and the probes present (X-API-Key), if any
port_to_pid() { echo "${PORT_PID[$1]}"; }

pause() { sleep 0.5; }   # let TIME_WAIT and the servers settle between runs

{
    echo "date: $(date -Is)"
    echo "host: $(uname -srm), $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
    echo "git: $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null) $(cd "$ROOT" && git status --porcelain 2>/dev/null | wc -l) changed files"
    echo "sluice: $("$SLUICE_BIN" --version 2>&1 | head -1), $SLUICE_SRC built $(date -r "$SLUICE_SRC" +%FT%T), sha256 $(sha256sum "$SLUICE_BIN" | cut -c1-12)"
    echo "nginx: $(nginx -v 2>&1)"
    echo "wrk: $(wrk -v 2>&1 | head -1)"
    echo "settings: BENCH_SECONDS=$SECONDS_PER_RUN BENCH_ROUNDS=$ROUNDS BENCH_LOGS=$LOGS servers on CPU $SERVER_CPU, wrk on CPU $WRK_CPU, phases $PHASES"
    echo "load before: $(cat /proc/loadavg)"
} >"$OUT/env.txt"
{ echo "== before, $(date -Is)"; top -bn1 -w 200 2>/dev/null | head -15; } >"$OUT/load.txt"
log "results in $OUT"
log "machine load before: $(cat /proc/loadavg)"

# ---------------------------------------------------------------- upstreams and proxies

start_fake up1
start_fake up2
PORT_PID[$PORT_up1]=$PID_up1
PORT_PID[$PORT_up2]=$PID_up2
U1="127.0.0.1:$PORT_up1"
U2="127.0.0.1:$PORT_up2"

WORKLOADS=(eth_blockNumber eth_getLogs)
# the features of the headline sluice (and of the cache phase's): budgets and a tier large
# enough never to refuse, so they cost their bookkeeping and nothing else (cost_profile flat:
# one credit a call, and no eth_getLogs block limit to split the 20 KB call on). A key is
# required (access.anonymous: deny) and wrk presents a scoped one on every request, in an
# X-API-Key header: its tier is the tier checked on every call; its scope (networks, method
# globs allowed and denied, contracts) is checked on every call too (contracts: read only
# for the methods that name one, none of the benchmark's). Made afresh each run: the config
# holds its sha256 only.
FEATURES_EP=", cost_profile: flat, credits: { per_second: 1000000000, per_month: 1000000000000 }"
BENCH_KEY="sl_bench$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')"
FEATURES_TOP="access: { anonymous: deny }
tiers: { bench: { per_second: 1000000000, per_minute: 1000000000 } }
keys:
  - { name: bench, sha256: \"$(printf '%s' "$BENCH_KEY" | sha256sum | cut -d' ' -f1)\", tier: bench, networks: [eth],
      methods: { allow: [\"eth_*\", \"net_version\"], deny: [\"eth_sendRawTransaction\", \"eth_sign*\"] },
      contracts: [\"0x00000000000000000000000000000000000000c0\", \"0x00000000000000000000000000000000000000c1\"] }"
CONCS=(64 8)

if has_phase main || has_phase rss; then
    start_nginx nginx "$U1" "$U2"
    start_nginx nginxlog "$U1" "$U2" log
    start_sluice sluice false "http://$U1" "http://$U2"
    start_sluice sluicelog true "http://$U1" "http://$U2"
    # wrk sends one call over and over: with coalescing (the default) most of sluice's
    # answers come from another client's upstream answer, which nginx does not do. The
    # headline target has coalescing off, so every request goes upstream as through nginx,
    # and the features a deployment runs on: access log, health probes (on by default),
    # a credit budget on each endpoint, a key required and a scoped one presented by wrk,
    # its tier checked on every call (FEATURES_TOP).
    NET_EXTRA="coalesce: { max_waiters: 0 }" EP_EXTRA="$FEATURES_EP" TOP_EXTRA="$FEATURES_TOP" \
        start_sluice sluicelognc true "http://$U1" "http://$U2"
    KEY_OF[sluicelognc]=$BENCH_KEY
    declare -A URL=([direct]="http://$U1/" [nginx]="http://127.0.0.1:$PORT_nginx/" [nginxlog]="http://127.0.0.1:$PORT_nginxlog/"
        [sluice]="http://127.0.0.1:$PORT_sluice/eth" [sluicelog]="http://127.0.0.1:$PORT_sluicelog/eth"
        [sluicelognc]="http://127.0.0.1:$PORT_sluicelognc/eth")
    declare -A PPID_OF=([direct]=$PID_up1 [nginx]=$PID_nginx [nginxlog]=$PID_nginxlog [sluice]=$PID_sluice [sluicelog]=$PID_sluicelog
        [sluicelognc]=$PID_sluicelognc)
    declare -A LOGF=([direct]="" [nginx]="" [nginxlog]="$TMP/nginxlog/access.log" [sluice]="" [sluicelog]="$TMP/sluicelog.log"
        [sluicelognc]="$TMP/sluicelognc.log")
    for t in direct nginx nginxlog sluice sluicelog sluicelognc; do
        for wl in "${WORKLOADS[@]}"; do probe "$t" "${URL[$t]}" "$wl"; done
    done
    check_key sluicelognc "${URL[sluicelognc]}"
fi

# ---------------------------------------------------------------- main: 4 targets x 2 workloads x 2 concurrencies

if has_phase main; then
    TARGETS=(direct nginx nginxlog sluice sluicelog sluicelognc)
    log "main phase: ${#TARGETS[@]} targets x ${#WORKLOADS[@]} workloads x ${#CONCS[@]} concurrencies x $ROUNDS rounds x ${SECONDS_PER_RUN}s"
    # warm-up (not recorded): 1 s per target and workload
    for wl in "${WORKLOADS[@]}"; do
        for t in "${TARGETS[@]}"; do
            BENCH_METHOD=$wl BENCH_API_KEY=${KEY_OF[$t]:-} taskset -c "$WRK_CPU" wrk -t1 -c64 -d1s -s "$HERE/post.lua" \
                "${URL[$t]}" >/dev/null 2>&1
        done
    done
    for r in $(seq 1 "$ROUNDS"); do
        # rotate the target order every round so no target always runs first or last
        order=()
        for i in $(seq 0 $((${#TARGETS[@]} - 1))); do order+=("${TARGETS[$(((i + r - 1) % ${#TARGETS[@]}))]}"); done
        for wl in "${WORKLOADS[@]}"; do
            for c in "${CONCS[@]}"; do
                for t in "${order[@]}"; do
                    measure main "$t" "$wl" "$c" "$r" "${URL[$t]}" "${PPID_OF[$t]}" "$PORT_up1,$PORT_up2" "" "${LOGF[$t]}"
                    pause
                done
            done
        done
    done
    : >"$TMP/sluicelog.log"
    : >"$TMP/sluicelognc.log"
fi

# ---------------------------------------------------------------- cache: answers from the response cache (issue 23)

if has_phase cache; then
    # sluice as the headline target (coalescing off, features on, the scoped key) with the
    # response cache on (its default; written out here): after the first call, eth_chainId
    # is answered from the cache. nginx + access log proxies the same call upstream every time.
    [ -n "${PORT_nginxlog:-}" ] || start_nginx nginxlog "$U1" "$U2" log
    NET_EXTRA="coalesce: { max_waiters: 0 }" EP_EXTRA="$FEATURES_EP" \
        TOP_EXTRA="$FEATURES_TOP"$'\n'"cache: { enabled: true }" start_sluice cachesl true "http://$U1" "http://$U2"
    KEY_OF[cachesl]=$BENCH_KEY
    declare -A CURL=([nginxlog]="http://127.0.0.1:$PORT_nginxlog/" [cachesl]="http://127.0.0.1:$PORT_cachesl/eth")
    declare -A CPID=([nginxlog]=$PID_nginxlog [cachesl]=$PID_cachesl)
    declare -A CLOG=([nginxlog]="$TMP/nginxlog/access.log" [cachesl]="$TMP/cachesl.log")
    for t in nginxlog cachesl; do probe "$t" "${CURL[$t]}" eth_chainId; done
    check_key cachesl "${CURL[cachesl]}"
    hit=$(curl -s -m 5 -D - -o /dev/null "${CURL[cachesl]}" -H "X-API-Key: $BENCH_KEY" -H 'Content-Type: application/json' \
        -d "$(rpc_body eth_chainId)" | tr -d '\r' | awk -F': ' 'tolower($1) == "x-sluice-cache" { print $2 }')
    [ "$hit" = hit ] || die "cache phase: sluice's second eth_chainId was not a cache hit (X-Sluice-Cache: $hit)"
    log "cache phase: sluice (response cache hits) vs nginx + log (upstream), eth_chainId, c=64 and 8, $ROUNDS rounds"
    for t in nginxlog cachesl; do
        BENCH_METHOD=eth_chainId BENCH_API_KEY=${KEY_OF[$t]:-} taskset -c "$WRK_CPU" wrk -t1 -c64 -d1s -s "$HERE/post.lua" \
            "${CURL[$t]}" >/dev/null 2>&1
    done
    for r in $(seq 1 "$ROUNDS"); do
        if [ $((r % 2)) = 1 ]; then order=(nginxlog cachesl); else order=(cachesl nginxlog); fi
        for c in "${CONCS[@]}"; do
            for t in "${order[@]}"; do
                measure cache "$t" eth_chainId "$c" "$r" "${CURL[$t]}" "${CPID[$t]}" "$PORT_up1,$PORT_up2" "" "${CLOG[$t]}"
                pause
            done
        done
    done
    : >"$TMP/cachesl.log"
fi

# ---------------------------------------------------------------- features: what each layer costs

# sluice as configured by default vs the same with one feature changed, on the
# small answer at c=64: shared-state flushing off (issue: state layer <= 1 us),
# health probes off (what ranking costs beyond the per-tick sort), a credit
# budget on every endpoint (accounting <= 0.5 us), a client tier that every
# call is checked against (limiter <= 0.5 us). Paired per round.
if has_phase features; then
    start_sluice fbase false "http://$U1" "http://$U2"
    STATE_EXTRA=", flush_ms: 0" start_sluice fnoflush false "http://$U1" "http://$U2"
    NET_EXTRA="ranking: { probe_interval_ms: 0 }" start_sluice fnoprobe false "http://$U1" "http://$U2"
    EP_EXTRA=", cost_profile: alchemy, credits: { per_second: 1000000000, per_month: 1000000000000 }" \
        start_sluice fcredits false "http://$U1" "http://$U2"
    TOP_EXTRA="tiers: { anonymous: { per_second: 1000000000, per_minute: 1000000000 } }" \
        start_sluice flimits false "http://$U1" "http://$U2"
    FTARGETS=(fbase fnoflush fnoprobe fcredits flimits)
    for t in "${FTARGETS[@]}"; do probe "$t" "http://127.0.0.1:$(eval echo "\$PORT_$t")/eth" eth_blockNumber; done
    log "features phase: ${FTARGETS[*]}, eth_blockNumber c=64, $ROUNDS rounds"
    for r in $(seq 1 "$ROUNDS"); do
        order=()
        for i in $(seq 0 $((${#FTARGETS[@]} - 1))); do order+=("${FTARGETS[$(((i + r - 1) % ${#FTARGETS[@]}))]}"); done
        for t in "${order[@]}"; do
            eval "port=\$PORT_$t pid=\$PID_$t"
            measure features "$t" eth_blockNumber 64 "$r" "http://127.0.0.1:$port/eth" "$pid" "$PORT_up1,$PORT_up2" "" ""
            pause
        done
    done
fi

# ---------------------------------------------------------------- pressure: the level and merged polls

# sluice as configured by default vs pressure.enabled: false (no level, header, shedding
# or merging: what the layer costs on an idle network, target <= 0.5 us/req), and
# receipt polls with merging (default 2 ms window) vs merge_window_ms: 0 (what merging
# costs and saves: upstream requests per poll). Paired per round, indicative: wall-clock
# CPU on a shared machine. The stable figures are callgrind's (tests/bench/callgrind.sh,
# run last in this phase when valgrind is installed).
if has_phase pressure; then
    start_sluice ppress false "http://$U1" "http://$U2"
    NET_EXTRA="pressure: { enabled: false }" start_sluice pnopress false "http://$U1" "http://$U2"
    NET_EXTRA="pressure: { merge_window_ms: 0 }" start_sluice pnomerge false "http://$U1" "http://$U2"
    for t in ppress pnopress; do probe "$t" "http://127.0.0.1:$(eval echo "\$PORT_$t")/eth" eth_blockNumber; done
    for t in ppress pnomerge; do probe "$t" "http://127.0.0.1:$(eval echo "\$PORT_$t")/eth" eth_getTransactionReceipt; done
    log "pressure phase: [ppress, pnopress] eth_blockNumber and [ppress, pnomerge] eth_getTransactionReceipt, c=64, $ROUNDS rounds"
    for r in $(seq 1 "$ROUNDS"); do
        for pair in "eth_blockNumber ppress pnopress" "eth_getTransactionReceipt ppress pnomerge"; do
            read -r wl a b <<<"$pair"
            if [ $((r % 2)) = 1 ]; then order=("$a" "$b"); else order=("$b" "$a"); fi
            for t in "${order[@]}"; do
                eval "port=\$PORT_$t pid=\$PID_$t"
                measure pressure "$t" "$wl" 64 "$r" "http://127.0.0.1:$port/eth" "$pid" "$PORT_up1,$PORT_up2" "" ""
                pause
            done
        done
    done
    if command -v valgrind >/dev/null && command -v node >/dev/null; then
        log "pressure phase: callgrind instruction counts (1 worker, fixed request counts)"
        SLUICE_BIN=$SLUICE_BIN FAKEPROVIDER_BIN=$FP_BIN "$HERE/callgrind.sh" --out "$OUT" >/dev/null \
            || { log "!! callgrind.sh failed"; FAILS=$((FAILS + 1)); }
    else
        log "pressure phase: valgrind or node missing, no callgrind figures"
    fi
fi

# ---------------------------------------------------------------- failure: refused first endpoint

if has_phase refused; then
    DEAD=$(free_port)
    if curl -s -m 2 -o /dev/null "http://127.0.0.1:$DEAD/"; [ $? -ne 7 ]; then
        die "port $DEAD is not refusing connections"
    fi
    start_sluice refused false "http://127.0.0.1:$DEAD" "http://$U1"
    start_sluice healthy false "http://$U1"
    probe refused "http://127.0.0.1:$PORT_refused/eth" eth_blockNumber
    probe healthy "http://127.0.0.1:$PORT_healthy/eth" eth_blockNumber
    log "refused-first phase: [dead:$DEAD, up1] vs [up1], c=8, $ROUNDS rounds"
    for t in refused healthy; do
        BENCH_METHOD=eth_blockNumber taskset -c "$WRK_CPU" wrk -t1 -c8 -d1s -s "$HERE/post.lua" \
            "http://127.0.0.1:$(eval echo "\$PORT_$t")/eth" >/dev/null 2>&1
    done
    for r in $(seq 1 "$ROUNDS"); do
        if [ $((r % 2)) = 1 ]; then order=(refused healthy); else order=(healthy refused); fi
        for t in "${order[@]}"; do
            eval "port=\$PORT_$t pid=\$PID_$t"
            measure refused "$t" eth_blockNumber 8 "$r" "http://127.0.0.1:$port/eth" "$pid" "$PORT_up1" "" ""
            pause
        done
    done
fi

# ---------------------------------------------------------------- failure: one endpoint answers 429

if has_phase 429; then
    start_fake rl429 --mode http429 --retry-after 2
    start_fake ok1
    start_fake ok2
    for n in rl429 ok1 ok2; do eval "PORT_PID[\$PORT_$n]=\$PID_$n"; done
    start_sluice one429 false "http://127.0.0.1:$PORT_rl429" "http://127.0.0.1:$PORT_ok1" "http://127.0.0.1:$PORT_ok2"
    start_sluice no429 false "http://127.0.0.1:$PORT_ok1" "http://127.0.0.1:$PORT_ok2"
    code=$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$PORT_rl429/" -d "$(rpc_body eth_blockNumber)")
    [ "$code" = 429 ] || die "the 429 provider answered $code"
    probe one429 "http://127.0.0.1:$PORT_one429/eth" eth_blockNumber
    probe no429 "http://127.0.0.1:$PORT_no429/eth" eth_blockNumber
    log "one-429 phase: [429 (Retry-After: 2), ok1, ok2] vs [ok1, ok2], c=64, $ROUNDS rounds"
    for r in $(seq 1 "$ROUNDS"); do
        if [ $((r % 2)) = 1 ]; then order=(one429 no429); else order=(no429 one429); fi
        for t in "${order[@]}"; do
            eval "port=\$PORT_$t pid=\$PID_$t"
            if [ "$t" = one429 ]; then ups="$PORT_rl429,$PORT_ok1,$PORT_ok2" first=$PORT_rl429
            else ups="$PORT_ok1,$PORT_ok2" first=$PORT_ok1; fi
            measure one429 "$t" eth_blockNumber 64 "$r" "http://127.0.0.1:$port/eth" "$pid" "$ups" "$first" ""
            pause
        done
    done
fi

# ---------------------------------------------------------------- failure: the first of three upstreams hangs

# The hung upstream accepts and reads every request and never answers. sluice
# (attempt_ms 2000: hedged reads, demotion on the first timeout) and nginx
# (proxy_read_timeout 2s, proxy_next_upstream timeout, tries 3, max_fails 1)
# in front of [hung, ok1, ok2]; "added" latency is against sluice in front of
# [ok1, ok2] in the same round. Upstream requests per client request count the
# hung one's too. wrk waits up to 5 s for an answer (its default 2 s would
# count every failover through the hung upstream as a wrk timeout).
if has_phase hung; then
    start_fake hung --mode hang
    start_fake hok1
    start_fake hok2
    for n in hung hok1 hok2; do eval "PORT_PID[\$PORT_$n]=\$PID_$n"; done
    HUNG_UPS="$PORT_hung,$PORT_hok1,$PORT_hok2"
    NET_EXTRA="timeouts: { attempt_ms: 2000, first_byte_ms: 2000 }"
    start_sluice shung false "http://127.0.0.1:$PORT_hung" "http://127.0.0.1:$PORT_hok1" "http://127.0.0.1:$PORT_hok2"
    start_sluice shealthy false "http://127.0.0.1:$PORT_hok1" "http://127.0.0.1:$PORT_hok2"
    # wrk sends one body over and over: concurrent identical reads share an upstream call
    # (coalescing), so this variant shows what hedging alone costs in upstream requests
    NET_EXTRA=$'timeouts: { attempt_ms: 2000, first_byte_ms: 2000 }\n    coalesce: { max_waiters: 0 }'
    start_sluice shungnc false "http://127.0.0.1:$PORT_hung" "http://127.0.0.1:$PORT_hok1" "http://127.0.0.1:$PORT_hok2"
    unset NET_EXTRA
    start_nginx nhung "127.0.0.1:$PORT_hung" "127.0.0.1:$PORT_hok1" "127.0.0.1:$PORT_hok2"
    probe shealthy "http://127.0.0.1:$PORT_shealthy/eth" eth_blockNumber
    log "hung-first phase: [hung, ok1, ok2] sluice and nginx vs sluice [ok1, ok2], c=8, $ROUNDS rounds"
    WRK_EXTRA="--timeout 5s"
    for r in $(seq 1 "$ROUNDS"); do
        # the fault lasts the whole phase: round 1 meets it fresh, later rounds the
        # steady state (nginx keeps a timed-out upstream out for fail_timeout, 10 s,
        # then tries it again; sluice demotes it for demote_ms, 30 s, and hedges)
        case $((r % 4)) in
            1) order=(shung nhung shungnc shealthy) ;; 2) order=(nhung shungnc shealthy shung) ;;
            3) order=(shungnc shealthy shung nhung) ;; *) order=(shealthy shung nhung shungnc) ;;
        esac
        for t in "${order[@]}"; do
            eval "port=\$PORT_$t pid=\$PID_$t"
            if [ "$t" = shealthy ]; then ups="$PORT_hok1,$PORT_hok2" first=""
            else ups=$HUNG_UPS first=$PORT_hung; fi
            measure hung "$t" eth_blockNumber 8 "$r" "http://127.0.0.1:$port/eth" "$pid" "$ups" "$first" ""
            pause
        done
    done
    unset WRK_EXTRA
fi

# ---------------------------------------------------------------- RSS per worker with 1,000 keep-alive clients

if has_phase rss; then
    echo "proxy,workload,conns,established,worker,rss_idle_kb,rss_max_kb,master_rss_kb,requests,errors" >"$RSS_CSV"
    rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status" 2>/dev/null || echo 0; }
    for t in sluice nginx; do
        for wl in "${WORKLOADS[@]}"; do
            master=${PPID_OF[$t]}
            workers=($(children "$master"))
            declare -A idle=() peak=()
            for w in "${workers[@]}"; do idle[$w]=$(rss_kb "$w"); peak[$w]=${idle[$w]}; done
            port=${URL[$t]#http://127.0.0.1:}; port=${port%%/*}
            raw="$OUT/raw/rss-$t-$wl-c$RSS_CONNS.txt"
            # every connection sends one request per second: the clients stay, the load stays low
            BENCH_METHOD=$wl BENCH_DELAY_MS=1000 taskset -c "$WRK_CPU" wrk -t1 -c"$RSS_CONNS" \
                -d"${RSS_SECONDS}s" --timeout 5s -s "$HERE/post.lua" "${URL[$t]}" >"$raw" 2>&1 &
            WRK_BG=$!
            est=0
            while kill -0 "$WRK_BG" 2>/dev/null; do
                for w in "${workers[@]}"; do
                    kb=$(rss_kb "$w"); [ "${kb:-0}" -gt "${peak[$w]}" ] && peak[$w]=$kb
                done
                e=$(ss -Htn state established "( sport = :$port )" 2>/dev/null | wc -l)
                [ "$e" -gt "$est" ] && est=$e
                sleep 0.25
            done
            wait "$WRK_BG"; WRK_BG=""
            line=$(grep '^BENCH ' "$raw") || { cat "$raw" >&2; die "wrk printed no BENCH line ($raw)"; }
            reqs=$(sed -E 's/.*requests=([0-9]+).*/\1/' <<<"$line")
            errs=$(awk '{ for (i = 2; i <= NF; i++) { split($i, a, "="); if (a[1] ~ /^(status|connect|read|write|timeout)$/) s += a[2] } print s + 0 }' <<<"$line")
            mrss=$(rss_kb "$master")
            for w in "${workers[@]}"; do
                echo "$t,$wl,$RSS_CONNS,$est,$w,${idle[$w]},${peak[$w]},$mrss,$reqs,$errs" >>"$RSS_CSV"
            done
            log "rss $t $wl: $est established, worker peak RSS $(for w in "${workers[@]}"; do printf '%s ' "$((peak[$w] / 1024))MB"; done), $reqs requests, $errs errors"
            if [ "$errs" != 0 ]; then log "!! FAIL rss $t $wl: wrk errors ($raw)"; FAILS=$((FAILS + 1)); fi
            if [ "$est" -lt $((RSS_CONNS * 9 / 10)) ]; then
                log "!! rss $t $wl: only $est of $RSS_CONNS connections were established at once"
                FAILS=$((FAILS + 1))
            fi
            unset idle peak
            pause
        done
    done
fi

# ---------------------------------------------------------------- report

echo "load after: $(cat /proc/loadavg)" >>"$OUT/env.txt"
{ echo "== after, $(date -Is)"; top -bn1 -w 200 2>/dev/null | head -15; } >>"$OUT/load.txt"
python3 "$HERE/summarize.py" "$OUT" | tee "$OUT/summary.md"
log "machine load after: $(cat /proc/loadavg)"
if [ "$FAILS" -gt 0 ]; then
    log "!! $FAILS problem(s): wrk errors, non-2xx answers, worker respawns or missing connections (see above and $OUT)"
    exit 1
fi
log "done; results in $OUT"
