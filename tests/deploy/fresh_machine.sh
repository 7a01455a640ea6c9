#!/usr/bin/env bash
# The README's first command on a fresh machine, for real: a bare Debian
# bookworm container (debootstrap minbase, nothing else installed) gets the
# repository's files and runs `deploy/demo.sh` exactly as the README says,
# as root, as a newcomer would. tests/run-all.sh runs it once.
#
#   1. podman's configuration and the base image (tests/deploy/podman_env.sh)
#   2. the files a clone has: every tracked file as it is in the work tree, plus
#      untracked ones git does not ignore (so a local run tests what is about to
#      be committed); no build folder, no node_modules
#   3. deploy/demo.sh in the container (host network, free ports through the
#      demo's own SLUICE_PORT / SLUICE_ADMIN_PORT); it installs what it needs
#   4. a JSON-RPC answer through it, and /healthz on the admin listener
#   5. the README's "run sluice on your own configuration" lines in the same
#      container: cmake with no options builds every default target, then
#      `sluice --check` on the demo's configuration
#   6. the container is removed whatever happened
#
# A machine that cannot build the product without a test package fails at 3.
# Needs root (or rootful podman). Prints its wall time.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
t0=$(date +%s)
name=sluice-fresh-test-$$
work=$(mktemp -d)

say() { printf '[fresh %3ss] %s\n' "$(($(date +%s) - t0))" "$*"; }
fail() { say "FAIL: $*"; exit 1; }

deploy/install-deps.sh

# ---- 1. podman ----
. tests/deploy/podman_env.sh
port=$(free_port)
admin_port=$(free_port)

log_lines=40
trap podman_cleanup EXIT

base_image

# ---- 2. the repository's files ----
mkdir "$work/sluice"
git -C "$root" ls-files -z --cached --others --exclude-standard |
    (cd "$root" && xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' _) |
    tar -C "$root" --null -T - -c | tar -C "$work/sluice" -x
[ ! -e "$work/sluice/build" ] || fail "a build folder was copied"
say "repository files: $(find "$work/sluice" -type f | wc -l) files"

# ---- 3. deploy/demo.sh, exactly as the README says ----
# The container has nothing but Debian's minbase: no compiler, no cmake, no
# node, no Criterion. The demo must install what it needs and run.
podman run -d --name "$name" --network host --pull=never \
    -v "$work/sluice:/root/sluice" -w /root/sluice \
    -e SLUICE_PORT="$port" -e SLUICE_ADMIN_PORT="$admin_port" \
    localhost/debian:bookworm-slim deploy/demo.sh >/dev/null
say "deploy/demo.sh started in a bare bookworm container (port $port, admin $admin_port)"

rpc() {   # network method -> the answer body
    curl -sS --max-time 5 -H 'content-type: application/json' \
        -d "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"$2\",\"params\":[]}" "http://127.0.0.1:$port/$1"
}
# apt, the build and the fakes: minutes on a cold mirror; 20 at the most
deadline=$(($(date +%s) + 1200))
until rpc eth eth_blockNumber 2>/dev/null | grep -q '"result":"0x'; do
    [ "$(podman inspect -f '{{.State.Running}}' "$name" 2>/dev/null)" = true ] ||
        fail "deploy/demo.sh exited before it served (exit $(podman inspect -f '{{.State.ExitCode}}' "$name"))"
    [ "$(date +%s)" -lt "$deadline" ] || fail "no JSON-RPC answer on 127.0.0.1:$port/eth after 20 minutes"
    sleep 2
done
say "demo listening"

# ---- 4. what the demo promises ----
answer=$(rpc eth eth_blockNumber)
grep -q '"id":7' <<<"$answer" && grep -q '"result":"0x' <<<"$answer" || fail "eth_blockNumber: $answer"
say "eth_blockNumber through sluice: $answer"
answer=$(rpc solana getSlot)
grep -q '"result":[0-9]' <<<"$answer" || fail "getSlot: $answer"
say "getSlot through sluice: $answer"
health=$(curl -sS --max-time 5 "http://127.0.0.1:$admin_port/healthz")
[ "$health" = '{"status":"ok"}' ] || fail "/healthz said: $health"
say "/healthz on the admin listener: $health"

# ---- 5. the README's own-configuration lines, same machine ----
podman exec -w /root/sluice "$name" sh -c \
    'cmake -S . -B build && cmake --build build -j && build/server/sluice --check -c var/demo/sluice.yaml' \
    >"$work/own.log" 2>&1 || { tail -30 "$work/own.log"; fail "the README's own-configuration lines"; }
grep -q "tests not built" "$work/own.log" || fail "cmake did not say it left the tests out"
say "README's own-configuration lines: built with no options (tests left out, said so), --check passed"
