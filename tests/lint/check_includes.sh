#!/usr/bin/env bash
# tests/lint/check_includes.sh [TREE]: the rooms' include rules (docs/architecture.md).
# Fails, naming file and line, when a room includes a project header it must not:
#
#   base/     base only
#   wire/     base, wire            (formats: no decisions, no I/O)
#   policy/   base, wire, policy    (pure decisions: no room that does I/O)
#   state/    base, state           (remembers: knows no HTTP, no decisions)
#   pool/     base, wire, policy, state, pool        (knows no client, no operator)
#   admin/    base, wire, policy, state, admin, and of pool/ only pool/pool_conf.h
#   gateway/  anything
#
# and in every room: a `*_int.h` header is for its own folder (and tests) only.
#
# Inside pool/ (docs/architecture.md, "Inside pool/"), each file belongs to a
# layer: the transport (connections, exchanges, HTTP, DNS, TLS), the endpoint
# state (health, rank, credits, pressure levels), the call, or one satellite
# of the call (hedge, coalesce, merge, held, pressure, credit). A file
# includes no pool/ header but its layer's ones: the transport nothing of the
# endpoint state or the call, the endpoint state nothing of the call, the call
# not the transport's inside, and a satellite no other satellite's header
# (its own comes with pool/pool_call_int.h, the call layer's one header).
#
# `--self-test` runs the check on a copy of the tree with one forbidden include
# planted per room and fails unless every plant is caught.
set -euo pipefail

allowed() {   # room -> space-separated rooms it may include
    case "$1" in
        base) echo "base" ;;
        wire) echo "base wire" ;;
        policy) echo "base wire policy" ;;
        state) echo "base state" ;;
        pool) echo "base wire policy state pool" ;;
        admin) echo "base wire policy state admin" ;;
        gateway) echo "base wire policy state pool admin gateway" ;;
    esac
}
# single headers a room may include from an otherwise closed room
exception() { [ "$1" = admin ] && [ "$2" = pool/pool_conf.h ]; }

ROOMS="base wire policy state pool admin gateway"

check() {
    local tree=$1 bad=0 room f line inc target
    for room in $ROOMS; do
        [ -d "$tree/$room" ] || continue
        for f in "$tree/$room"/*.c "$tree/$room"/*.h; do
            [ -e "$f" ] || continue
            while IFS=: read -r line inc; do
                inc=${inc#*\"}; inc=${inc%%\"*}
                target=${inc%%/*}
                [ "$target" = "$inc" ] && continue            # same-folder include without a room
                case " $ROOMS " in *" $target "*) ;; *) continue ;; esac
                case "$inc" in
                    *_int.h) if [ "$target" != "$room" ]; then
                                 echo "${f#"$tree"/}:$line: \"$inc\" is internal to $target/"
                                 bad=1
                             fi
                             continue ;;
                esac
                case " $(allowed "$room") " in *" $target "*) continue ;; esac
                exception "$room" "$inc" && continue
                echo "${f#"$tree"/}:$line: $room/ must not include \"$inc\""
                bad=1
            done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" || true)
        done
    done
    check_pool "$tree" || bad=1
    return $bad
}

pool_layer() {   # a pool/ file's name without extension -> its layer
    case "$1" in
        pool_conn | pool_dns | pool_exchange | pool_transport | pool_tls | pool_http | pool_delay | pool_link | \
            pool_link_int | pool_ask | pool_askchild | pool_ws) echo transport ;;
        pool_net | pool_endpoint | pool_health | pool_rank | pool_demote | pool_probe | pool_tick | pool_credit | \
            pool_credit_cluster | pool_pressure | pool_chain | pool_chainid | pool_chainprobe | pool_wshead | pool_wspass) echo net ;;
        pool_hedge | pool_coalesce | pool_merge | pool_held | pool_chain_call | pool_cache_call | pool_consensus) echo "sat:${1#pool_}" ;;
        pool_pressure_call | pool_share) echo sat:pressure ;;
        pool_credit_call) echo sat:credit ;;
        *) echo call ;;
    esac
}

pool_allowed() { # layer -> the pool/ headers its files may include
    local common="pool.h pool_conf.h pool_delay.h pool_http.h pool_link.h"
    case "$1" in
        transport) echo "$common pool_link_int.h" ;;
        net) echo "$common pool_net.h" ;;
        call) echo "$common pool_call_int.h" ;;
        sat:*) echo "$common pool_call_int.h pool_${1#sat:}.h" ;;
    esac
}

# the call layer's header gathers the endpoint state and the satellites' per-call structs
SATELLITE_HEADERS="pool_cache_call.h pool_chain_call.h pool_coalesce.h pool_consensus.h pool_hedge.h pool_held.h pool_merge.h pool_pressure.h"

check_pool() {
    local tree=$1 bad=0 f base layer line inc h
    for f in "$tree"/pool/*.c "$tree"/pool/*.h; do
        [ -e "$f" ] || continue
        base=$(basename "$f")
        base=${base%.*}
        layer=$(pool_layer "$base")
        while IFS=: read -r line inc; do
            inc=${inc#*\"}; inc=${inc%%\"*}
            case "$inc" in pool/*) h=${inc#pool/} ;; *) continue ;; esac
            [ "$h" = "$base.h" ] && continue
            if [ "$base" = pool_call_int ]; then
                case " pool_net.h $SATELLITE_HEADERS " in *" $h "*) continue ;; esac
            fi
            case " $(pool_allowed "$layer") " in *" $h "*) continue ;; esac
            echo "${f#"$tree"/}:$line: a pool/ $layer file must not include \"$inc\""
            bad=1
        done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" || true)
    done
    return $bad
}

self_test() {
    local src=$1 tmp plant room victim caught=0 want=0
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' RETURN
    for room in $ROOMS; do
        [ -d "$src/$room" ] && mkdir -p "$tmp/$room" && cp "$src/$room"/*.[ch] "$tmp/$room/" 2>/dev/null || true
    done
    check "$tmp" >/dev/null || { echo "self-test: the clean copy already fails"; return 1; }
    # one forbidden include per room (gateway may include anything)
    for plant in "base:wire/envelope.h" "wire:policy/verdict.h" "policy:pool/pool.h" "state:policy/breaker.h" \
                 "pool:gateway/gw_rpc.h" "admin:pool/pool.h" "gateway:pool/pool_call_int.h"; do
        room=${plant%%:*}
        victim=$(ls "$tmp/$room"/*.c | head -n 1)
        want=$((want + 1))
        cp "$victim" "$victim.orig"
        printf '#include "%s"\n' "${plant#*:}" >>"$victim"
        if ! check "$tmp" >/dev/null; then caught=$((caught + 1)); else echo "self-test: missed $plant"; fi
        mv "$victim.orig" "$victim"
    done
    # and inside pool/: one plant per rule between its layers
    for plant in "pool_conn.c:pool/pool_call_int.h" "pool_dns.c:pool/pool_net.h" "pool_health.c:pool/pool_call_int.h" \
                 "pool_call.c:pool/pool_link_int.h" "pool_hedge.c:pool/pool_coalesce.h" \
                 "pool_merge.c:pool/pool_held.h"; do
        victim="$tmp/pool/${plant%%:*}"
        want=$((want + 1))
        cp "$victim" "$victim.orig"
        printf '#include "%s"\n' "${plant#*:}" >>"$victim"
        if ! check "$tmp" >/dev/null; then caught=$((caught + 1)); else echo "self-test: missed $plant"; fi
        mv "$victim.orig" "$victim"
    done
    echo "self-test: $caught of $want planted includes caught"
    [ "$caught" -eq "$want" ]
}

top=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" = --self-test ]; then
    self_test "${2:-$top}"
else
    tree=${1:-$top}
    if check "$tree"; then echo "includes: every room keeps its rule"; else exit 1; fi
fi
