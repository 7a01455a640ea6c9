#!/usr/bin/env bash
# tests/lint/check_reference.sh [TREE]: the reference pages of docs/reference/
# list exactly what the tables in the code hold, in both directions. Fails,
# naming page and name, for each name the code has and the page lacks
# ("missing") and each name the page lists and no code row has ("extra").
#
#   config.md   the config parser's field tables: every row `{"key", CFG_TYPE,
#               ...}` of every `static const cfg_field_t NAME[] = {` (also
#               spelled gw_cfg_field_t / GW_CFG_), as TABLE/key. The page's
#               blocks: a `### \`dotted.path\`` heading, then a line naming
#               "(table `TABLE`)"; the key is the path's last part.
#   metrics.md  every metric name (`sluice_...`) written in admin/'s sources,
#               less a histogram's _bucket/_sum/_count series. The page's
#               rows: `| \`sluice_...\` |`.
#   errors.md   the reply table's rows `[POOL_OUTCOME_X] = {STATUS, CODE,
#               "name"` as "name STATUS" (section "## Call outcomes"); the
#               X-macro lists STATE_REQ_OUTCOMES ("## Request outcomes") and
#               SL_OUTCOMES ("## Attempt outcomes"); every `"scope":"x"` the
#               sources write ("## `data.scope`"); every `"reason":"x"` and
#               every logs subscription's give_up(..., "x", ...) reason and
#               every access refusal ([POLICY_ACCESS_X] = "x")
#               ("## `data.reason`"). Rows: `| \`name\` | ...`.
#   events.md   the X-macro list STATE_EVENT_KINDS ("## Kinds").
#
# Tables are found by their shape in every source room, never by file path:
# files move between rooms and the GW_/gw_ prefixes are being dropped.
#
# `--self-test` runs the check on a copy with, for each page, a row planted in
# the code (reported missing) and an entry planted in the page (reported
# extra), and fails unless exactly those are reported.
set -euo pipefail
export LC_ALL=C

ROOMS="base wire policy state pool admin gateway config sub server"
REF=docs/reference

# The C files of the given rooms (default: every room) under tree.
sources() {
    local tree=$1 room dirs=()
    shift
    for room in ${*:-$ROOMS}; do
        [ -d "$tree/$room" ] && dirs+=("$tree/$room")
    done
    [ ${#dirs[@]} -gt 0 ] || return 0
    find "${dirs[@]}" -name '*.[ch]' | sort
}

# ---- what the code holds, one name per line, sorted ----

code_config() {
    sources "$1" | xargs awk '
        /static const (gw_)?cfg_field_t [a-z_0-9]+\[\] *= *\{/ {
            t = $0; sub(/.*cfg_field_t /, "", t); sub(/\[.*/, "", t); intab = 1; next }
        intab && /^\};/ { intab = 0 }
        intab && match($0, /\{"[a-z_0-9]+", *(GW_)?CFG_/) {
            s = substr($0, RSTART + 2); sub(/".*/, "", s); print t "/" s }' | sort -u
}

code_metrics() {
    local names
    names=$(sources "$1" admin | xargs grep -ohE '\bsluice_[a-z0-9_]*[a-z0-9]' | sort -u)
    # a histogram's series are its family's: drop X_bucket/_sum/_count when X is a name
    awk 'NR == FNR { have[$0] = 1; next }
         { stem = $0; if (sub(/_(bucket|sum|count)$/, "", stem) && (stem in have)) next; print }' \
        <(echo "$names") <(echo "$names") | sort -u
}

code_outcomes() {
    sources "$1" | xargs grep -ohE '\[[A-Z_]*OUTCOME_[A-Z_]+\] *= *\{ *[0-9]{3}, *[A-Za-z_0-9-]+, *"[a-z_]+"' |
        sed -E 's/.*\{ *([0-9]{3}), *[^,]+, *"([a-z_]+)"/\2 \1/' | sort -u
}

# code_xmacro TREE MACRO: the strings of the X(NAME, "string") rows of #define MACRO(X)
code_xmacro() {
    sources "$1" | xargs awk -v m="$2" '
        $0 ~ "^#define " m "\\(X\\)" { in_ = 1 }
        in_ { line = $0
              while (match(line, /X\([A-Z_0-9]+, *"[^"]+"\)/)) {
                  s = substr(line, RSTART, RLENGTH); line = substr(line, RSTART + RLENGTH)
                  sub(/^[^"]*"/, "", s); sub(/".*/, "", s); print s }
              if ($0 !~ /\\[[:space:]]*$/) in_ = 0 }' | sort -u
}

code_scopes() {
    sources "$1" | xargs grep -ohE '\\"scope\\":\\"[a-z_]+' | sed -E 's/.*\\"//' | sort -u
}

code_reasons() {
    {
        sources "$1" | xargs grep -ohE '\\"reason\\":\\"[a-z_]+' | sed -E 's/.*\\"//'
        sources "$1" | xargs grep -ohE '\bgive_up\([^";]*"[a-z_]+"' | sed -E 's/.*"([a-z_]+)"$/\1/'
        # the access policy's refusals (policy/access.c's reason_names; its "ok" is no refusal)
        sources "$1" | xargs grep -ohE '\[POLICY_ACCESS_[A-Z_]+\] = "[a-z_]+"' | grep -v '_OK\]' |
            sed -E 's/.*"([a-z_]+)"$/\1/'
    } | sort -u
}

# ---- what the pages list ----

doc_config() {
    awk '/^### `/ { p = $0; sub(/^### `/, "", p); sub(/`.*/, "", p); have = 1; next }
         have && match($0, /\(table `[a-z_0-9]+`\)/) {
             t = substr($0, RSTART + 8, RLENGTH - 10)
             k = p; sub(/.*\./, "", k); sub(/\[\]$/, "", k)
             print t "/" k; have = 0 }
         /^## / { have = 0 }' "$1" | sort -u
}

doc_metrics() {
    grep -oE '^\| `sluice_[a-z0-9_]+` \|' "$1" | sed -E 's/^\| `([^`]+)`.*/\1/' | sort -u
}

# doc_section PAGE PREFIX [with-status]: the first backticked cell of each table
# row in the sections whose "## " heading starts with PREFIX (and, with
# with-status, the second cell: "name STATUS").
doc_section() {
    awk -v pre="## $2" -v st="${3:-}" '
        /^## / { in_ = index($0, pre) == 1; next }
        in_ && /^\| `[^`]+` \|/ {
            n = split($0, c, /\|/); name = c[2]; gsub(/[ `]/, "", name)
            if (st != "") { s = c[3]; gsub(/ /, "", s); print name " " s } else print name }' "$1" | sort -u
}

# ---- the comparison ----

# compare PAGE WHAT CODE-LIST DOC-LIST: prints a line per difference, returns 1 if any
compare() {
    local page=$1 what=$2 code=$3 doc=$4 bad=0 n
    if [ -z "$code" ]; then
        echo "$page: no $what found in the code (has its table moved to another shape? fix check_reference.sh)"
        return 1
    fi
    while read -r n; do
        [ -n "$n" ] || continue
        echo "$page: missing \`$n\` ($what: in the code, not on the page)"; bad=1
    done < <(comm -23 <(echo "$code") <(echo "$doc"))
    while read -r n; do
        [ -n "$n" ] || continue
        echo "$page: extra \`$n\` ($what: on the page, in no code row)"; bad=1
    done < <(comm -13 <(echo "$code") <(echo "$doc"))
    return $bad
}

check() {
    local tree=$1 rc=0 p=$1/$REF
    for f in config metrics errors events; do
        [ -f "$p/$f.md" ] || { echo "$REF/$f.md: missing page"; rc=1; }
    done
    [ $rc -eq 0 ] || return 1
    compare "$REF/config.md" "config key" "$(code_config "$tree")" "$(doc_config "$p/config.md")" || rc=1
    compare "$REF/metrics.md" "metric" "$(code_metrics "$tree")" "$(doc_metrics "$p/metrics.md")" || rc=1
    compare "$REF/errors.md" "call outcome and status" "$(code_outcomes "$tree")" \
        "$(doc_section "$p/errors.md" 'Call outcomes' status)" || rc=1
    compare "$REF/errors.md" "request outcome" "$(code_xmacro "$tree" STATE_REQ_OUTCOMES)" \
        "$(doc_section "$p/errors.md" 'Request outcomes')" || rc=1
    compare "$REF/errors.md" "attempt outcome" "$(code_xmacro "$tree" SL_OUTCOMES)" \
        "$(doc_section "$p/errors.md" 'Attempt outcomes')" || rc=1
    compare "$REF/errors.md" "data.scope" "$(code_scopes "$tree")" "$(doc_section "$p/errors.md" '`data.scope`')" || rc=1
    compare "$REF/errors.md" "data.reason" "$(code_reasons "$tree")" "$(doc_section "$p/errors.md" '`data.reason`')" || rc=1
    compare "$REF/events.md" "event kind" "$(code_xmacro "$tree" STATE_EVENT_KINDS)" \
        "$(doc_section "$p/events.md" 'Kinds')" || rc=1
    return $rc
}

# the file under tree's rooms holding the fixed string s (the first one)
holding() {
    sources "$1" | xargs grep -lF -- "$2" | head -1
}

self_test() {
    local src=$1 tmp room f got want
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' RETURN
    mkdir -p "$tmp/$REF"
    cp "$src/$REF"/*.md "$tmp/$REF/"
    for room in $ROOMS; do
        [ -d "$src/$room" ] && mkdir -p "$tmp/$room" && cp "$src/$room"/*.[ch] "$tmp/$room/" 2>/dev/null || true
    done
    check "$tmp" >/dev/null || { echo "self-test: the clean copy already fails"; check "$tmp"; return 1; }

    # config: a row in the code, a block on the page
    f=$(holding "$tmp" '{"max_batch", ')
    [ -n "$f" ] || { echo "self-test: no field table row for max_batch"; return 1; }
    sed -i -E 's/^([[:space:]]*)(\{"max_batch", ((GW_)?CFG_))/\1{"zz_planted_key", \3U32, 0, 0, 1},\n\1\2/' "$f"
    printf '\n### `server.zz_page_only`\n\nSection `server` (table `server_fields`) · integer\n' >>"$tmp/$REF/config.md"
    # metrics: a name in admin/, a row on the page
    f=$(sources "$tmp" admin | head -1)
    printf '\nstatic const char *const zz_planted = "sluice_zz_planted_total";\n' >>"$f"
    printf '| `sluice_zz_page_only_total` | counter | — | planted |\n' >>"$tmp/$REF/metrics.md"
    # errors: a reason in the code, a reason on the page
    f=$(holding "$tmp" '\"reason\":\"')
    printf '\nstatic const char zz_planted_data[] = "{\\"reason\\":\\"zz_planted_reason\\"}";\n' >>"$f"
    printf '\n## `data.reason` (planted)\n\n| `zz_page_only_reason` | x |\n' >>"$tmp/$REF/errors.md"
    # events: a kind in the code, a kind on the page
    f=$(holding "$tmp" '#define STATE_EVENT_KINDS(X)')
    sed -i -E 's/^([[:space:]]*)X\(BREAKER_OPENED, "breaker_opened"\)/\1X(ZZ_PLANTED, "zz_planted_kind") \\\n&/' "$f"
    printf '\n## Kinds (planted)\n\n| `zz_page_only_kind` | x |\n' >>"$tmp/$REF/events.md"

    if check "$tmp" >/dev/null; then echo "self-test: the planted copy passes"; return 1; fi
    got=$(check "$tmp" | sed -E 's/^[^:]*: ([a-z]+) `([^`]*)`.*/\1:\2/' | sort | tr '\n' ' ' || true)
    want="extra:server_fields/zz_page_only extra:sluice_zz_page_only_total extra:zz_page_only_kind extra:zz_page_only_reason missing:server_fields/zz_planted_key missing:sluice_zz_planted_total missing:zz_planted_kind missing:zz_planted_reason "
    echo "self-test: reported: $got"
    [ "$got" = "$want" ] || { echo "self-test: want exactly: $want"; return 1; }
}

top=$(cd "$(dirname "$0")/../.." && pwd)
case "${1:-}" in
    --self-test) self_test "${2:-$top}" ;;
    *) check "${1:-$top}" && echo "reference: every config key, metric, outcome, scope, reason and event kind is on its page, and nothing else" ;;
esac
