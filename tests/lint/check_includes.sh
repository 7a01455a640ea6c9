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
                 "pool:gateway/gw_rpc.h" "admin:pool/pool.h" "gateway:pool/pool_int.h"; do
        room=${plant%%:*}
        victim=$(ls "$tmp/$room"/*.c | head -n 1)
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
