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
#   config/   base, wire, policy, state, config, and of pool/ only pool/pool_conf.h
#   sub/      base, wire, policy, state, pool, sub    (knows no client edge)
#   gateway/  base, wire, policy, state, pool, admin, config, sub, gateway (never server/)
#   server/   anything: it wires the rooms
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
# `--self-test` runs the check once on a copy of the tree with one forbidden
# include planted per room and per pool/ layer rule, and fails unless exactly
# the planted lines are reported.
set -euo pipefail

# room -> space-separated rooms it may include
declare -A ALLOWED=(
    [base]="base"
    [wire]="base wire"
    [policy]="base wire policy"
    [state]="base state"
    [pool]="base wire policy state pool"
    [admin]="base wire policy state admin"
    [config]="base wire policy state config"
    [sub]="base wire policy state pool sub"
    [gateway]="base wire policy state pool admin config sub gateway"
    [server]="base wire policy state pool admin config sub gateway server"
)
# single headers a room may include from an otherwise closed room
exception() { case "$1" in admin | config) [ "$2" = pool/pool_conf.h ] ;; *) return 1 ;; esac; }

ROOMS="base wire policy state pool admin config sub gateway server"
INCLUDE_RE='^[[:space:]]*#[[:space:]]*include[[:space:]]*"'

# Every lookup below is a variable or a case, never a $(...) subshell, and each
# room is one grep: the self-test and the lint itself then take well under a
# second rather than a fork per include line (seconds on a busy 2-core machine).
check() {
    local tree=$1 bad=0 room f line inc target
    for room in $ROOMS; do
        [ -d "$tree/$room" ] || continue
        while IFS=: read -r f line inc; do
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
            case " ${ALLOWED[$room]} " in *" $target "*) continue ;; esac
            exception "$room" "$inc" && continue
            echo "${f#"$tree"/}:$line: $room/ must not include \"$inc\""
            bad=1
        done < <(grep -Hn "$INCLUDE_RE" "$tree/$room"/*.[ch] 2>/dev/null || true)
    done
    check_pool "$tree" || bad=1
    return $bad
}

pool_layer() {   # a pool/ file's name without extension -> its layer, in LAYER
    case "$1" in
        pool_conn | pool_dns | pool_exchange | pool_transport | pool_tls | pool_http | pool_delay | pool_link | \
            pool_link_int | pool_ask | pool_askchild | pool_ws | pool_fail | pool_sock) LAYER=transport ;;
        pool_net | pool_endpoint | pool_health | pool_rank | pool_demote | pool_probe | pool_tick | pool_credit | \
            pool_credit_cluster | pool_pressure | pool_chain | pool_chainid | pool_chainprobe | pool_wshead | pool_wspass | \
            pool_lease) LAYER=net ;;
        pool_hedge | pool_coalesce | pool_merge | pool_held | pool_chain_call | pool_cache_call | pool_consensus | \
            pool_broadcast) LAYER="sat:${1#pool_}" ;;
        pool_pressure_call | pool_share) LAYER=sat:pressure ;;
        pool_credit_call) LAYER=sat:credit ;;
        pool_split) LAYER=compound ;;
        *) LAYER=call ;;
    esac
}

POOL_COMMON="pool.h pool_conf.h pool_delay.h pool_http.h pool_link.h"
pool_allowed() { # layer -> the pool/ headers its files may include, in POOL_ALLOWED
    case "$1" in
        transport) POOL_ALLOWED="$POOL_COMMON pool_link_int.h" ;;
        net) POOL_ALLOWED="$POOL_COMMON pool_net.h" ;;
        call) POOL_ALLOWED="$POOL_COMMON pool_call_int.h" ;;
        sat:*) POOL_ALLOWED="$POOL_COMMON pool_call_int.h pool_${1#sat:}.h" ;;
        compound) POOL_ALLOWED="$POOL_COMMON pool_logs.h" ;; # calls made of calls: the public door only
    esac
}

# the call layer's header gathers the endpoint state and the satellites' per-call structs
SATELLITE_HEADERS="pool_broadcast.h pool_cache_call.h pool_chain_call.h pool_coalesce.h pool_consensus.h pool_hedge.h pool_held.h pool_merge.h pool_pressure.h"

check_pool() {
    local tree=$1 bad=0 f base line inc h LAYER POOL_ALLOWED
    [ -d "$tree/pool" ] || return 0
    while IFS=: read -r f line inc; do
        base=${f##*/}
        base=${base%.*}
        inc=${inc#*\"}; inc=${inc%%\"*}
        case "$inc" in pool/*) h=${inc#pool/} ;; *) continue ;; esac
        [ "$h" = "$base.h" ] && continue
        if [ "$base" = pool_call_int ]; then
            case " pool_net.h $SATELLITE_HEADERS " in *" $h "*) continue ;; esac
        fi
        pool_layer "$base"
        pool_allowed "$LAYER"
        case " $POOL_ALLOWED " in *" $h "*) continue ;; esac
        echo "${f#"$tree"/}:$line: a pool/ $LAYER file must not include \"$inc\""
        bad=1
    done < <(grep -Hn "$INCLUDE_RE" "$tree"/pool/*.[ch] 2>/dev/null || true)
    return $bad
}

# Plants every forbidden include at once in a copy of the tree and runs the
# check once: it must report exactly the planted lines (file and line number),
# no more (the copy is clean before) and no fewer.
self_test() {
    local src=$1 tmp plant room victim want="" got
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' RETURN
    for room in $ROOMS; do
        [ -d "$src/$room" ] && mkdir -p "$tmp/$room" && cp "$src/$room"/*.[ch] "$tmp/$room/" 2>/dev/null || true
    done
    check "$tmp" >/dev/null || { echo "self-test: the clean copy already fails"; return 1; }
    # one forbidden include per room (server may include anything),
    # and inside pool/ one per rule between its layers
    for plant in "base:wire/envelope.h" "wire:policy/verdict.h" "policy:pool/pool.h" "state:policy/breaker.h" \
                 "pool:gateway/gw_rpc.h" "admin:pool/pool.h" "gateway:pool/pool_call_int.h" \
                 "gateway:server/srv_master.h" "sub:gateway/gw_exec.h" "config:pool/pool.h" \
                 "pool/pool_split.c:pool/pool_call_int.h" \
                 "pool/pool_conn.c:pool/pool_call_int.h" "pool/pool_dns.c:pool/pool_net.h" \
                 "pool/pool_health.c:pool/pool_call_int.h" "pool/pool_call.c:pool/pool_link_int.h" \
                 "pool/pool_hedge.c:pool/pool_coalesce.h" "pool/pool_merge.c:pool/pool_held.h"; do
        victim=${plant%%:*}
        case "$victim" in
            */*) victim="$tmp/$victim" ;;
            *) victim=$(ls "$tmp/$victim"/*.c | head -n 1) ;;
        esac
        printf '#include "%s"\n' "${plant#*:}" >>"$victim"
        want+="${victim#"$tmp"/}:$(wc -l <"$victim") ${plant#*:}"$'\n'
    done
    got=$(check "$tmp" || true)
    got=$(printf '%s\n' "$got" | sed -E 's/^([^:]+:[0-9]+):.*"([^"]+)".*$/\1 \2/' | sort)
    want=$(printf '%s' "$want" | sort)
    if [ "$got" != "$want" ]; then
        echo "self-test: the check reported"
        printf '%s\n' "$got"
        echo "self-test: but the planted includes are"
        printf '%s\n' "$want"
        return 1
    fi
    echo "self-test: $(printf '%s\n' "$want" | wc -l) planted includes caught, nothing else reported"
}

top=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" = --self-test ]; then
    self_test "${2:-$top}"
else
    tree=${1:-$top}
    if check "$tree"; then echo "includes: every room keeps its rule"; else exit 1; fi
fi
