#!/usr/bin/env bash
# Runs deploy/docker-compose.yml for real, with podman and podman-compose
# (no Docker engine on these machines; the files stay valid for Docker
# Compose v2). tests/run-all.sh runs it once, after the normal suite:
#
#   1. packages (deploy/install-deps.sh), a containers.conf of its own
#      (runc with cgroupfs, netavark + aardvark-dns: service names resolve)
#   2. the base image debian:bookworm-slim, made with debootstrap from the
#      Debian mirror apt uses (no registry is reachable); kept once imported
#   3. podman build of deploy/Dockerfile
#   4. up -d on free loopback ports; JSON-RPC through the published port,
#      /healthz and the admin API through the loopback admin port
#   5. kill -9 of a worker inside the container: respawned, service goes on,
#      a worker_restarted event
#   6. down, up again: the drain and the events are still there (volume)
#   7. down -v; whatever it made is removed even when a step fails
#
# Needs root (or rootful podman). Prints its wall time.
set -euo pipefail
cd "$(dirname "$0")/../.."
root=$PWD
t0=$(date +%s)
project=sluice-compose-test-$$
token=compose-test-token-$$
work=$(mktemp -d)
compose_file=deploy/docker-compose.yml

say() { printf '[compose %3ss] %s\n' "$(($(date +%s) - t0))" "$*"; }
fail() { say "FAIL: $*"; exit 1; }

deploy/install-deps.sh

# ---- 1. podman's configuration, for this run only ----
. tests/deploy/podman_env.sh
export SLUICE_PORT=$(free_port) SLUICE_WS_PORT=$(free_port) SLUICE_ADMIN_PORT=$(free_port) SLUICE_ADMIN_TOKEN=$token
# podman-compose 1.0.3 knows no profiles: "up sluice" starts the default
# stack (sluice and the fakes it depends on), not the cluster profile
trap podman_cleanup EXIT

# ---- 2. the base image ----
base_image

# ---- 3. the image ----
say "podman build deploy/Dockerfile"
podman build --network host --isolation chroot --pull=never -f deploy/Dockerfile -t sluice:local . \
    >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; fail "image build"; }

# ---- 4. up ----
volumes_before=$(podman volume ls -q | sort)
rpc() {   # method -> the answer body
    curl -sS --max-time 5 -H 'content-type: application/json' \
        -d "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"$1\",\"params\":[]}" "http://127.0.0.1:$SLUICE_PORT/eth"
}
admin() { curl -sS --max-time 5 -H "authorization: Bearer $token" "$@"; }
wait_rpc() {
    for _ in $(seq 1 120); do
        rpc eth_blockNumber 2>/dev/null | grep -q '"result":"0x' && return 0
        sleep 0.5
    done
    fail "no JSON-RPC answer on 127.0.0.1:$SLUICE_PORT/eth"
}
say "up -d (client port $SLUICE_PORT, admin 127.0.0.1:$SLUICE_ADMIN_PORT)"
compose up -d --no-build sluice >"$work/up.log" 2>&1 || { cat "$work/up.log"; fail "up"; }
wait_rpc
say "JSON-RPC through the published port: $(rpc eth_chainId)"
health=$(curl -sS --max-time 5 "http://127.0.0.1:$SLUICE_ADMIN_PORT/healthz")
[ "$health" = '{"status":"ok"}' ] || fail "/healthz said: $health"
say "/healthz on the loopback admin port: $health"
# every default works in the image: the state and the response cache (on by default, beside
# state.path) are writable by the image's user
if podman logs "$(run_containers sluice | head -n 1)" 2>&1 | grep -i 'permission denied'; then
    fail "the image cannot write where its defaults point"
fi
[ "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$SLUICE_ADMIN_PORT/admin/endpoints")" = 401 ] ||
    fail "the admin API answered without the token"
admin "http://127.0.0.1:$SLUICE_ADMIN_PORT/admin/endpoints" | grep -q '"id":"healthy"' || fail "/admin/endpoints"

# ---- 5. a worker killed inside the container ----
container=$(podman ps -q --filter "label=io.podman.compose.project=$project" --filter "label=com.docker.compose.service=sluice")
[ -n "$container" ] || fail "no sluice container"
workers() { podman exec "$container" cat /proc/1/task/1/children; }
before=$(workers)
victim=${before%% *}
[ -n "$victim" ] || fail "no worker process in the container"
podman exec "$container" sh -c "kill -9 $victim"
say "killed worker pid $victim (workers were: $before)"
for _ in $(seq 1 60); do
    now=$(workers)
    [ "$(wc -w <<<"$now")" = "$(wc -w <<<"$before")" ] && ! grep -qw "$victim" <<<"$now" && break
    sleep 0.5
done
grep -qw "$victim" <<<"$now" && fail "worker $victim was not replaced"
[ "$(wc -w <<<"$now")" = "$(wc -w <<<"$before")" ] || fail "workers after the kill: $now (before: $before)"
for i in $(seq 1 20); do rpc eth_blockNumber | grep -q '"result":"0x' || fail "request $i after the kill"; done
admin "http://127.0.0.1:$SLUICE_ADMIN_PORT/admin/events" | grep -q "\"kind\":\"worker_restarted\"" ||
    fail "no worker_restarted event"
say "worker respawned (workers now: $now), 20 requests answered, worker_restarted recorded"

# ---- 6. state on the volume across down / up ----
admin -X POST "http://127.0.0.1:$SLUICE_ADMIN_PORT/admin/endpoints/eth/slow/drain" | grep -q '"drained":true' ||
    fail "drain"
compose down -t 2 >"$work/down.log" 2>&1 || { cat "$work/down.log"; fail "down"; }
say "down (volume kept); up again"
compose up -d --no-build sluice >"$work/up2.log" 2>&1 || { cat "$work/up2.log"; fail "second up"; }
wait_rpc
admin "http://127.0.0.1:$SLUICE_ADMIN_PORT/admin/endpoints" |
    node -e 'const e=JSON.parse(require("fs").readFileSync(0,"utf8")).find((x)=>x.id==="slow"); process.exit(e && e.drained ? 0 : 1)' ||
    fail "the drain did not survive down/up"
evs=$(admin "http://127.0.0.1:$SLUICE_ADMIN_PORT/admin/events")
grep -q '"kind":"worker_restarted"' <<<"$evs" && grep -q '"kind":"endpoint_drained"' <<<"$evs" ||
    fail "the events did not survive down/up: $evs"
say "after down/up: endpoint slow still drained, earlier events still in the feed"

# ---- 7. down ----
compose down -v -t 2 >"$work/down2.log" 2>&1 || { cat "$work/down2.log"; fail "down -v"; }
[ -z "$(run_containers)" ] || fail "containers left after down"
[ -z "$(podman volume ls -q --filter "label=io.podman.compose.project=$project")" ] || fail "volumes left after down -v"
[ "$(podman volume ls -q | sort)" = "$volumes_before" ] || fail "anonymous volumes left: $(podman volume ls -q)"
say "down -v: passed"
