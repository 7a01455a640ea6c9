#!/usr/bin/env bash
# tests/lint/check_doc_names.sh [TREE]: the manual names only identifiers
# that exist: docs/architecture.md, README.md and every page under docs/
# (guide/, operate/, reference/, performance.md). Fails, naming file, line and
# name, for each one that occurs as a whole word in no source file of the
# product (*.c, *.h in every source room: the documents describe the product;
# a test helper is named by its file). The user's pages (all but
# docs/architecture.md) may also name what the scripts and tests under tests/
# and deploy/ hold (an environment variable such as SLUICE_PORT, a test's
# name) and the protocol names in PROTOCOL_NAMES.
#
# A name is a backticked span, outside fenced code blocks, that is a C
# identifier (optionally written as a call, `name()`, or an array, `name[]`)
# and either holds an underscore between two word characters or is written
# as a call. So `pool_call_start`, a static function like `call_next`, a
# constant like `POOL_FAIL_MAP`, a config key or event kind like
# `merge_window_ms` (the sources spell them too) are checked; plain words
# (`cheap`), prefixes (`pool_`), files (`pool_call.c`), config paths
# (`server.workers`) and patterns (`POOL_FAIL_*`, `<prefix>_<object>_t`) are
# not. A name that is gone from the code is the document's bug: a static
# function renamed, a parameter now a field.
#
# `--self-test` runs the check on a copy of the tree with names planted in
# the document and one name renamed in the code, and fails unless exactly
# those are reported.
set -euo pipefail
export LC_ALL=C

ROOMS="base wire policy state pool admin gateway config sub server"
DOC=docs/architecture.md

# every document checked, relative to the tree (the self-test plants in DOC)
docs() {
    local tree=$1 f
    for f in "$tree/README.md" "$tree"/docs/*.md "$tree"/docs/*/*.md; do
        [ -f "$f" ] && echo "${f#"$tree"/}"
    done
    return 0
}

# The names of the document, one per line with its first line number:
# "LINE NAME", sorted by name.
doc_names() {
    awk '/^[[:space:]]*```/ { fenced = !fenced; next }
         !fenced {
             line = $0
             while (match(line, /`[^`]*`/)) {
                 span = substr(line, RSTART + 1, RLENGTH - 2)
                 line = substr(line, RSTART + RLENGTH)
                 if (span !~ /^[A-Za-z][A-Za-z0-9_]*(\(\)|\[\])?$/) continue
                 if (span !~ /[A-Za-z0-9]_[A-Za-z0-9]/ && span !~ /\(\)$/) continue
                 sub(/(\(\)|\[\])$/, "", span)
                 if (!(span in first)) first[span] = NR
             }
         }
         END { for (n in first) print first[n], n }' "$1" | sort -k2,2
}

# Every word of the product's sources, sorted (a whole-word grep, once).
source_words() {
    local tree=$1 room dirs=()
    for room in $ROOMS; do
        [ -d "$tree/$room" ] && dirs+=("$tree/$room")
    done
    grep -rhoE --include='*.c' --include='*.h' '[A-Za-z_][A-Za-z0-9_]*' "${dirs[@]}" | sort -u
}

# Names of the protocols sluice speaks that no file of the repository spells.
PROTOCOL_NAMES="RST_STREAM REFUSED_STREAM"

# What the user's pages may name besides the product's words: the words of
# the scripts, configs and tests under tests/ and deploy/, and PROTOCOL_NAMES.
outside_words() {
    local tree=$1 dirs=() d
    for d in tests deploy; do [ -d "$tree/$d" ] && dirs+=("$tree/$d"); done
    {
        [ ${#dirs[@]} -eq 0 ] || grep -rhoIE --exclude-dir=node_modules '[A-Za-z_][A-Za-z0-9_]*' "${dirs[@]}"
        printf '%s\n' $PROTOCOL_NAMES
    } | sort -u
}

check() {
    local tree=$1 missing doc words all known bad=0
    words=$(source_words "$tree")
    all=$( (echo "$words"; outside_words "$tree") | sort -u)
    for doc in $(docs "$tree"); do
        if [ "$doc" = "$DOC" ]; then known=$words; else known=$all; fi
        missing=$(join -1 2 -2 1 -v 1 -o 1.1,1.2 <(doc_names "$tree/$doc") <(echo "$known") | sort -n)
        [ -z "$missing" ] && continue
        while read -r line name; do
            echo "$doc:$line: \`$name\` is in no source file (a stale name?)"
        done <<<"$missing"
        bad=1
    done
    return $bad
}

self_test() {
    local src=$1 tmp room got want
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' RETURN
    mkdir -p "$tmp/docs"
    cp "$src/$DOC" "$tmp/$DOC"
    for room in $ROOMS; do
        [ -d "$src/$room" ] && mkdir -p "$tmp/$room" && cp "$src/$room"/*.[ch] "$tmp/$room/" 2>/dev/null || true
    done
    check "$tmp" >/dev/null || { echo "self-test: the clean copy already fails"; check "$tmp"; return 1; }
    # planted: a gone function, a gone static written as a call, a gone
    # constant; and, not to be reported, a prefix, a pattern, a fenced name
    cat >>"$tmp/$DOC" <<'PLANT'

Planted: `pool_gone_function`, `zzgone()`, `GONE_CONSTANT_X`; never names: `pool_`, `GONE_*`, `zzplain`.
```c
`fenced_gone_name`
```
PLANT
    # a user's page: a gone name is reported, a protocol name is not
    mkdir -p "$tmp/docs/guide"
    printf 'Planted: `guide_gone_name`, and `RST_STREAM` (a protocol name).\n' >"$tmp/docs/guide/planted.md"
    # and a name the document uses, renamed in the code
    grep -qw state_lmdb_err "$tmp/$DOC" || { echo "self-test: the document no longer names state_lmdb_err"; return 1; }
    sed -i 's/\bstate_lmdb_err\b/state_lmdb_error_renamed/g' "$tmp"/state/*.[ch]
    if check "$tmp" >/dev/null; then echo "self-test: the planted copy passes"; return 1; fi
    got=$(check "$tmp" | sed -E 's/.*`(.*)`.*/\1/' | sort | tr '\n' ' ' || true)
    want="GONE_CONSTANT_X guide_gone_name pool_gone_function state_lmdb_err zzgone "
    echo "self-test: reported: $got"
    [ "$got" = "$want" ] || { echo "self-test: want exactly: $want"; return 1; }
}

top=$(cd "$(dirname "$0")/../.." && pwd)
case "${1:-}" in
    --self-test) self_test "${2:-$top}" ;;
    *) check "${1:-$top}" && echo "doc names: every name in README.md and docs/ is in the sources" ;;
esac
