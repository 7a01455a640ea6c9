# Sourced by callgrind.sh and callgrind_req.sh (they set HERE, SLUICE_BIN,
# FP_BIN and SL_PID, the pid their cleanup stops).

# die MSG, log MSG: as both scripts say them (CG_SCRIPT names the script).
die() { echo "${CG_SCRIPT:-cg}: FATAL: $*" >&2; exit 1; }
log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# cg_prologue SCRIPT HELP_END TMP_NAME "TOOL..." ARG...: what both scripts do
# first. Reads --out DIR and --help (prints lines 2..HELP_END of SCRIPT),
# checks the tools and the two binaries, makes TMP (sluice-TMP_NAME.*) and
# OUT (DIR, or TMP/out).
cg_prologue() {
    local script=$1 help_end=$2 tmp_name=$3 tools=$4
    shift 4
    CG_SCRIPT=$(basename "$script")
    OUT=""
    while [ $# -gt 0 ]; do
        case "$1" in
            --out) OUT=$2; shift ;;
            -h|--help) sed -n "2,${help_end}p" "$script" | sed 's/^# \{0,1\}//'; exit 0 ;;
            *) echo "$CG_SCRIPT: unknown argument $1" >&2; exit 2 ;;
        esac
        shift
    done
    for tool in $tools; do command -v "$tool" >/dev/null || die "$tool is not installed"; done
    [ -x "$SLUICE_BIN" ] && [ -x "$FP_BIN" ] || die "build sluice and fakeprovider first"
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-$tmp_name.XXXXXX") || die "mktemp failed"
    [ -n "$OUT" ] || OUT=$TMP/out
    mkdir -p "$OUT"
}

# cg_worker_run DIR NAME METHOD N CONC: runs sluice under callgrind with
# DIR/s.yaml (one worker), sends it exactly N calls of METHOD, CONC at once,
# stops it, and sets CG_FILE to the worker's callgrind file (also written to
# DIR/worker_file). The log is DIR/log. CG_URL_SUFFIX (e.g. "/sl_<key>") is
# appended to the network's URL.
cg_worker_run() {
    local d=$1 name=$2 method=$3 n=$4 conc=$5
    valgrind --tool=callgrind --callgrind-out-file="$d/cg.%p" "$SLUICE_BIN" -c "$d/s.yaml" >"$d/log" 2>&1 &
    SL_PID=$!
    local port=""
    for _ in $(seq 600); do
        port=$(grep -Eo 'listening on http://[0-9.]+:[0-9]+' "$d/log" | grep -Eo '[0-9]+$') && break
        kill -0 "$SL_PID" 2>/dev/null || { cat "$d/log" >&2; die "sluice ($name) exited"; }
        sleep 0.1
    done
    [ -n "$port" ] || die "sluice ($name) did not start under valgrind"
    node "$HERE/fixed.mjs" "http://127.0.0.1:$port/eth${CG_URL_SUFFIX:-}" "$method" "$n" "$conc" >"$d/client.txt" 2>&1 \
        || { cat "$d/client.txt" >&2; die "client run failed ($name, $n)"; }
    local master=$SL_PID
    kill -TERM "$master"
    wait "$master" 2>/dev/null
    SL_PID=""
    # the master's file is named after its pid; the worker's is the other one
    CG_FILE=""
    for g in "$d"/cg.*; do [ "$g" != "$d/cg.$master" ] && CG_FILE=$g; done
    [ -n "$CG_FILE" ] || die "no callgrind file of the worker in $d"
    echo "$CG_FILE" >"$d/worker_file"
}
