#!/usr/bin/env bash
# tests/lint/check_call_cycles.sh [TREE]: how tangled a room's files are.
#
# The graph: one node per `ROOM/*.c` file, and an edge A -> B when A names,
# followed by `(`, a non-static function that B defines (ctags finds the
# definitions; comments and string literals are blanked first, so a name in
# them is no call). Its strongly connected components, taken inside each room,
# are the sets of files that all call each other round: the largest is printed
# for every room present, and the check fails when a room of BOUND below has one
# larger than its bound. A room that is absent passes (sub/ may not exist yet).
#
#   pool/  7   the call layer's files (docs/architecture.md, "Inside pool/");
#              the transport and the endpoint state stay out of every cycle
#   sub/   3   the subscriptions: sub, follow, pass
#
# Calls only: a function named without `(` (a row of hooks, a callback) is no
# edge, and a static inline function of a header is not seen.
#
# `--self-test [TREE]` runs the check on a copy of the tree, clean first (it
# must pass), then with a ring of BOUND + 1 files planted in each bounded room
# (an absent room is created): it must fail, naming every bounded room.
set -euo pipefail

BOUNDS="pool:7 sub:3"
ROOMS="base wire policy state pool admin config sub gateway server"

check() {   # TREE -> prints each room's largest cycle; fails if a bound is exceeded
    python3 - "$1" "$ROOMS" "$BOUNDS" <<'EOF'
import os, re, subprocess, sys

tree, rooms, bounds = sys.argv[1], sys.argv[2].split(), dict(
    (b.split(':')[0], int(b.split(':')[1])) for b in sys.argv[3].split())
files = []
for room in rooms:
    d = os.path.join(tree, room)
    if os.path.isdir(d):
        files += [room + '/' + f for f in sorted(os.listdir(d)) if f.endswith('.c')]

# non-static function definitions: ctags marks the static ones with `file:`
tags = subprocess.run(['ctags', '-f', '-', '--c-kinds=f', '--fields=+K'] + files,
                      cwd=tree, capture_output=True, text=True, check=True).stdout
defined = {}
for line in tags.splitlines():
    cols = line.split('\t')
    if len(cols) >= 2 and 'file:' not in cols[3:]:
        defined.setdefault(cols[0], cols[1])

blank = re.compile(r'//[^\n]*|/\*.*?\*/|"(?:\\.|[^"\\\n])*"|\'(?:\\.|[^\'\\\n])*\'', re.S)
called = re.compile(r'\b([A-Za-z_]\w*)\s*\(')
edges = {f: set() for f in files}
for f in files:
    with open(os.path.join(tree, f), errors='replace') as src:
        text = blank.sub(' ', src.read())
    for name in set(called.findall(text)):
        to = defined.get(name)
        if to is not None and to != f:
            edges[f].add(to)

def components(nodes):   # Tarjan's, iterative: a list of SCCs (lists of files)
    index, low, stack, on, out, n = {}, {}, [], set(), [], 0
    for root in sorted(nodes):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root] & nodes)))]
        index[root] = low[root] = n; n += 1; stack.append(root); on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = n; n += 1; stack.append(w); on.add(w)
                    work.append((w, iter(sorted(edges[w] & nodes))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop(); on.discard(w); comp.append(w)
                        if w == v:
                            break
                    out.append(comp)
    return out

bad = 0
for room in rooms:
    nodes = {f for f in files if f.startswith(room + '/')}
    if not nodes:
        if room in bounds:
            print(f'{room}/: absent (bound {bounds[room]})')
        continue
    big = max(components(nodes), key=lambda c: (len(c), sorted(c)))
    names = ' '.join(sorted(os.path.basename(f) for f in big)) if len(big) > 1 else '(no cycle)'
    bound = bounds.get(room)
    verdict = '' if bound is None else f' (bound {bound})'
    if bound is not None and len(big) > bound:
        verdict = f' EXCEEDS the bound {bound}'
        bad = 1
    print(f'{room}/: largest cycle {len(big)} file(s){verdict}: {names}')
sys.exit(bad)
EOF
}

# Copies the rooms' sources, checks the clean copy passes, then plants a ring
# of bound + 1 files (each calls the next's non-static function) in every
# bounded room and checks the check fails naming each of them.
self_test() {
    local src=$1 tmp room bound i n got b
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' RETURN
    for room in $ROOMS; do
        [ -d "$src/$room" ] && mkdir -p "$tmp/$room" && cp "$src/$room"/*.[ch] "$tmp/$room/" 2>/dev/null || true
    done
    check "$tmp" >/dev/null || { echo "self-test: the clean copy already fails"; check "$tmp" || true; return 1; }
    for b in $BOUNDS; do
        room=${b%%:*} bound=${b#*:} n=$((${b#*:} + 1))
        mkdir -p "$tmp/$room"
        for ((i = 0; i < n; i++)); do
            printf 'int planted_%s_%d(int x);\nint planted_%s_%d(int x)\n{\n    return x ? planted_%s_%d(x - 1) : 0;\n}\n' \
                "$room" $(((i + 1) % n)) "$room" "$i" "$room" $(((i + 1) % n)) >"$tmp/$room/planted_$i.c"
        done
    done
    if got=$(check "$tmp"); then
        echo "self-test: the planted cycles were not caught"
        printf '%s\n' "$got"
        return 1
    fi
    for b in $BOUNDS; do
        room=${b%%:*}
        case "$got" in
            *"$room/: largest cycle $((${b#*:} + 1)) file(s) EXCEEDS"*) ;;
            *) echo "self-test: the planted cycle in $room/ was not reported"; printf '%s\n' "$got"; return 1 ;;
        esac
    done
    echo "self-test: a planted cycle over the bound caught in each of: ${BOUNDS}"
}

top=$(cd "$(dirname "$0")/../.." && pwd)
if [ "${1:-}" = --self-test ]; then
    self_test "${2:-$top}"
else
    check "${1:-$top}"
fi
