#!/usr/bin/env bash
# Runs the "cluster" profile of deploy/docker-compose.yml for real, with
# podman and podman-compose (see tests/deploy/compose.sh for the set-up):
#
#   1. packages, containers.conf, the base image (as compose.sh)
#   2. podman build of deploy/Dockerfile: sluice:local and sluice-redis:local
#   3. up -d sluice-1 sluice-2 (with redis and the fakes) on free ports; both
#      answer JSON-RPC; both see 2 hosts in the cluster
#   4. a drain on sluice-1 holds on sluice-2 at once; sluice-2's event feed
#      has it, from host sluice-1
#   5. the redis container stopped: both keep answering, degraded; started
#      again (AOF on its volume): shared, cluster_restored in both feeds
#   6. down -v; whatever it made is removed even when a step fails
#
# podman-compose 1.0.3 knows no profiles, so the services are named (Docker
# Compose v2: --profile cluster). Needs root (or rootful podman).
set -euo pipefail
cd "$(dirname "$0")/../.."
t0=$(date +%s)
project=sluice-cluster-test-$$
token=cluster-test-token-$$
redis_pw=cluster-test-redis-$$
work=$(mktemp -d)
compose_file=deploy/docker-compose.yml

say() { printf '[cluster %3ss] %s\n' "$(($(date +%s) - t0))" "$*"; }
fail() { say "FAIL: $*"; exit 1; }

deploy/install-deps.sh

. tests/deploy/podman_env.sh
export SLUICE_CLUSTER_PORT_1=$(free_port) SLUICE_CLUSTER_ADMIN_PORT_1=$(free_port)
export SLUICE_CLUSTER_PORT_2=$(free_port) SLUICE_CLUSTER_ADMIN_PORT_2=$(free_port)
export SLUICE_ADMIN_TOKEN=$token REDIS_PASSWORD=$redis_pw
container() { podman ps -q --filter "label=io.podman.compose.project=$project" --filter "label=com.docker.compose.service=$1"; }

trap podman_cleanup EXIT

base_image

say "podman build deploy/Dockerfile (sluice:local, sluice-redis:local)"
podman build --network host --isolation chroot --pull=never -f deploy/Dockerfile -t sluice:local . \
    >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; fail "image build"; }
podman build --network host --isolation chroot --pull=never -f deploy/Dockerfile --target redis \
    -t sluice-redis:local . >"$work/build-redis.log" 2>&1 || { tail -40 "$work/build-redis.log"; fail "redis image"; }

rpc() {   # port -> the answer body of eth_blockNumber
    curl -sS --max-time 5 -H 'content-type: application/json' \
        -d '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}' "http://127.0.0.1:$1/eth"
}
admin() { curl -sS --max-time 5 -H "authorization: Bearer $token" "$@"; }
a1=http://127.0.0.1:$SLUICE_CLUSTER_ADMIN_PORT_1
a2=http://127.0.0.1:$SLUICE_CLUSTER_ADMIN_PORT_2
mode() { admin "$1/readyz" | node -e 'const r=JSON.parse(require("fs").readFileSync(0,"utf8")); console.log(r.cluster.mode, r.cluster.hosts)'; }
wait_for() {   # what, command...
    local what=$1; shift
    for _ in $(seq 1 120); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
    fail "timed out waiting for $what"
}

say "up -d sluice-1 sluice-2 (ports $SLUICE_CLUSTER_PORT_1, $SLUICE_CLUSTER_PORT_2)"
compose up -d --no-build sluice-1 sluice-2 >"$work/up.log" 2>&1 || { cat "$work/up.log"; fail "up"; }
for p in "$SLUICE_CLUSTER_PORT_1" "$SLUICE_CLUSTER_PORT_2"; do
    wait_for "JSON-RPC on $p" sh -c "curl -sS --max-time 5 -H 'content-type: application/json' -d '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\",\"params\":[]}' http://127.0.0.1:$p/eth | grep -q '\"result\":\"0x'"
done
wait_for "both hosts counted" sh -c "[ \"\$(curl -sS -H 'authorization: Bearer $token' $a1/readyz | grep -o '\"hosts\":2')\" ] && [ \"\$(curl -sS -H 'authorization: Bearer $token' $a2/readyz | grep -o '\"hosts\":2')\" ]"
say "both answer; sluice-1: $(mode "$a1"); sluice-2: $(mode "$a2")"

admin -X POST "$a1/admin/endpoints/eth/slow/drain" | grep -q '"drained":true' || fail "drain on sluice-1"
wait_for "the drain on sluice-2" sh -c "curl -sS -H 'authorization: Bearer $token' $a2/admin/endpoints | node -e 'const e=JSON.parse(require(\"fs\").readFileSync(0,\"utf8\")).find((x)=>x.id===\"slow\"); process.exit(e && e.drained ? 0 : 1)'"
wait_for "sluice-2's feed" sh -c "curl -sS -H 'authorization: Bearer $token' $a2/admin/events | grep -q '\"kind\":\"endpoint_drained\",[^}]*\"host\":\"sluice-1\"'"
say "drained on sluice-1: drained on sluice-2, in its event feed from host sluice-1"

podman stop -t 2 "$(container redis)" >/dev/null
wait_for "degraded" sh -c "curl -sS -H 'authorization: Bearer $token' $a1/readyz | grep -q '\"mode\":\"degraded\"' && curl -sS -H 'authorization: Bearer $token' $a2/readyz | grep -q '\"mode\":\"degraded\"'"
for i in $(seq 1 10); do
    rpc "$SLUICE_CLUSTER_PORT_1" | grep -q '"result":"0x' || fail "sluice-1 request $i without Redis"
    rpc "$SLUICE_CLUSTER_PORT_2" | grep -q '"result":"0x' || fail "sluice-2 request $i without Redis"
done
say "redis stopped: both hosts degraded and answering"
podman start "$(run_containers redis)" >/dev/null
wait_for "shared again" sh -c "curl -sS -H 'authorization: Bearer $token' $a1/readyz | grep -q '\"mode\":\"shared\"' && curl -sS -H 'authorization: Bearer $token' $a2/readyz | grep -q '\"mode\":\"shared\"'"
wait_for "both hosts' cluster_restored in sluice-2's feed" sh -c "[ \$(curl -sS -H 'authorization: Bearer $token' $a2/admin/events | grep -o '\"kind\":\"cluster_restored\"' | wc -l) -ge 2 ]"
admin "$a2/admin/endpoints" | grep -q '"drained":true' || fail "the drain did not outlive Redis' restart"
say "redis started again: shared, cluster_restored from both hosts, the drain still there"

compose down -v -t 2 >"$work/down.log" 2>&1 || { cat "$work/down.log"; fail "down -v"; }
[ -z "$(run_containers)" ] || fail "containers left after down"
say "down -v: passed"
