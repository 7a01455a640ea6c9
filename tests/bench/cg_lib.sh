# Sourced by callgrind.sh and callgrind_req.sh (they set HERE, SLUICE_BIN,
# die and SL_PID, the pid their cleanup stops).
#
# cg_worker_run DIR NAME METHOD N CONC: runs sluice under callgrind with
# DIR/s.yaml (one worker), sends it exactly N calls of METHOD, CONC at once,
# stops it, and sets CG_FILE to the worker's callgrind file (also written to
# DIR/worker_file). The log is DIR/log.
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
    node "$HERE/fixed.mjs" "http://127.0.0.1:$port/eth" "$method" "$n" "$conc" >"$d/client.txt" 2>&1 \
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
