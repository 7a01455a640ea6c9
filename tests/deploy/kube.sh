#!/usr/bin/env bash
# Plays deploy/k8s/ (with the test overlay deploy/k8s/test/: three fake
# providers and a Secret naming them) for real with `podman kube play`:
#
#   1. packages, containers.conf, the base image (tests/deploy/podman_env.sh);
#      the images sluice:local and sluice-redis:local as they are (in
#      tests/run-all.sh compose.sh and compose_cluster.sh have just built
#      them from this tree), built when missing or with SLUICE_KUBE_BUILD=1
#   2. the manifests made playable by podman 4.3.1 (tests/deploy/kube_to_podman.py
#      says what changes and why): one pod per replica, Services as DNS
#      aliases on a network of the run's own, the Secret as a podman secret
#   3. Redis, the fakes, then both sluice replicas; every readiness probe
#      (its exec command from the manifest, run with podman exec) and every
#      liveness probe (podman healthcheck run) pass; /readyz wants the token,
#      /healthz does not; both answer eth_blockNumber through their
#      hostPorts, and http://sluice:8545/eth from another pod; both see 2
#      hosts in the cluster (/readyz), each under its pod's name
#   4. an endpoint drained on replica 0 is drained on replica 1, whose event
#      feed has it from replica 0's host
#   5. SIGTERM to replica 1 (podman stop, as the kubelet's) with a call in
#      flight (2 s at the fake): the call is answered, replica 1 exits 0
#      within terminationGracePeriodSeconds; replica 0 goes on
#   6. `podman kube down` of every file played; whatever is left (pods,
#      volumes, the secret, the network) is removed even when a step fails
#
# What differs from `kubectl apply -f deploy/k8s/` (kube_to_podman.py's
# header says why; NOTES-h34.md has the table): no Service objects (DNS
# aliases instead, no load balancing or port mapping: the test reaches each
# pod on its hostPort), the Secret made with `podman secret create`, pods
# instead of Deployments, no readiness gating (podman 4.3.1 ignores
# readinessProbe: step 3 runs it), livenessProbe becomes a podman healthcheck
# that nothing schedules without systemd, terminationGracePeriodSeconds and
# the preStop hook unused (step 5 passes the grace to podman stop), no
# PodDisruptionBudget, no scheduler (affinity, rollouts). Needs root
# (rootful podman). About 25 s. Prints its wall time.
set -euo pipefail
cd "$(dirname "$0")/../.."
t0=$(date +%s)
kube_prefix=kube-test-$$
work=$(mktemp -d)

say() { printf '[kube %3ss] %s\n' "$(($(date +%s) - t0))" "$*"; }
fail() { say "FAIL: $*"; exit 1; }

deploy/install-deps.sh

# ---- 1. podman, the images ----
. tests/deploy/podman_env.sh
net=$kube_prefix
played=()
# after podman_cleanup has removed the run's containers: what kube down left
kube_cleanup() {
    local f
    for f in "${played[@]}"; do podman kube down "$f" >/dev/null 2>&1; done
    podman pod ls -q --filter "name=^$kube_prefix-" | xargs -r podman pod rm -f -t 2 >/dev/null 2>&1
    podman volume ls -q --filter "name=^$kube_prefix-" | xargs -r podman volume rm -f >/dev/null 2>&1
    podman secret ls --format '{{.Name}}' | grep "^$kube_prefix-" | xargs -r podman secret rm >/dev/null 2>&1
    podman network rm -f "$net" >/dev/null 2>&1
}
cleanup_more=kube_cleanup
trap podman_cleanup EXIT

if [ "${SLUICE_KUBE_BUILD:-0}" = 1 ] || ! podman image exists sluice:local || ! podman image exists sluice-redis:local; then
    base_image
    say "podman build deploy/Dockerfile (sluice:local, sluice-redis:local)"
    podman build --network host --isolation chroot --pull=never -f deploy/Dockerfile -t sluice:local . \
        >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; fail "image build"; }
    podman build --network host --isolation chroot --pull=never -f deploy/Dockerfile --target redis \
        -t sluice-redis:local . >"$work/build-redis.log" 2>&1 || { tail -40 "$work/build-redis.log"; fail "redis image"; }
else
    say "images sluice:local and sluice-redis:local as built ($(podman image inspect -f '{{.Created}}' sluice:local | cut -c1-19))"
fi

# ---- 2. the manifests, for podman ----
http0=$(free_port) admin0=$(free_port) http1=$(free_port) admin1=$(free_port)
mkdir "$work/play"
python3 tests/deploy/kube_to_podman.py --prefix "$kube_prefix" --out "$work/play" \
    --publish "sluice/0/http=$http0" --publish "sluice/0/admin=$admin0" \
    --publish "sluice/1/http=$http1" --publish "sluice/1/admin=$admin1" \
    deploy/k8s/*.yaml deploy/k8s/test/*.yaml || fail "kube_to_podman.py"
token=$(python3 -c 'import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d["kind"] == "Secret": print(d["stringData"]["SLUICE_ADMIN_TOKEN"])' deploy/k8s/test/fakes.yaml)
[ ${#token} -ge 16 ] || fail "no admin token in deploy/k8s/test/fakes.yaml"

podman network create "$net" >/dev/null   # a network of its own: DNS (aardvark) on
for s in "$work/play/$kube_prefix"-*.json; do
    podman secret create "$(basename "$s" .json)" "$s" >/dev/null
done

# ---- 3. play ----
# A probe's exec command as the manifest has it, run in the pod's container.
probe() {   # pod container probe-kind
    local cmd
    mapfile -d '' cmd < <(python3 -c 'import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d["kind"] == "Pod" and d["metadata"]["name"] == sys.argv[2]:
        for c in d["spec"]["containers"]:
            if c["name"] == sys.argv[3]:
                sys.stdout.write("\0".join(c[sys.argv[4]]["exec"]["command"]) + "\0")' "$pod_file" "$1" "$2" "$3")
    [ ${#cmd[@]} -gt 0 ] || fail "no $3 exec command for $1/$2"
    podman exec "$1-$2" "${cmd[@]}"
}
wait_for() {   # what, command...
    local what=$1; shift
    for _ in $(seq 1 120); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
    fail "timed out waiting for $what"
}
while read -r pod_file aliases pods; do
    spec=$net
    for a in ${aliases//,/ }; do [ "$a" = - ] || spec="$spec:alias=$a"; done
    spec=${spec//:alias=/,alias=}; spec=${spec/,alias=/:alias=}
    say "kube play $(basename "$pod_file") (pods ${pods//,/ }; network $spec)"
    played+=("$pod_file")
    # podman 4.3.1 without systemd logs an error for each healthcheck it cannot schedule: kept in the log
    podman kube play --network "$spec" "$pod_file" >"$work/play-$(basename "$pod_file").log" 2>&1 ||
        { cat "$work/play-$(basename "$pod_file").log"; fail "kube play $(basename "$pod_file")"; }
    case $pods in
        *redis*) wait_for "Redis' readiness probe" probe "${pods%%,*}" redis readinessProbe ;;
    esac
done <"$work/play/plan"
pod_file=$(awk '{print $1}' "$work/play/plan" | grep -- '-sluice.yaml$')

rpc() {   # port -> the answer body of eth_blockNumber
    curl -sS --max-time 5 -H 'content-type: application/json' \
        -d '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}' "http://127.0.0.1:$1/eth"
}
admin() { curl -sS --max-time 5 -H "authorization: Bearer $token" "$@"; }
a0=http://127.0.0.1:$admin0 a1=http://127.0.0.1:$admin1
s0=$kube_prefix-sluice-0 s1=$kube_prefix-sluice-1
for p in "$http0" "$http1"; do
    wait_for "JSON-RPC on $p" sh -c "curl -sS --max-time 5 -H 'content-type: application/json' -d '{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_blockNumber\",\"params\":[]}' http://127.0.0.1:$p/eth | grep -q '\"result\":\"0x'"
done
for pod in "$s0" "$s1"; do
    wait_for "$pod's readiness probe" probe "$pod" sluice readinessProbe
done
for a in "$a0" "$a1"; do
    [ "$(curl -sS --max-time 5 "$a/healthz")" = '{"status":"ok"}' ] || fail "liveness: $a/healthz"
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$a/readyz")" = 401 ] || fail "/readyz answered without the token"
done
# podman turns each livenessProbe into a healthcheck (which nothing runs on
# its own here, without systemd): run them once
for c in $(run_containers); do
    [ "$(podman inspect -f '{{if .Config.Healthcheck}}yes{{end}}' "$c")" = yes ] || continue
    podman healthcheck run "$c" >/dev/null 2>&1 ||
        fail "liveness probe of $(podman inspect -f '{{.Name}}' "$c"): $(podman inspect -f '{{json .Config.Healthcheck.Test}}' "$c")"
done
say "both replicas answer eth_blockNumber (ports $http0, $http1); readiness probes and liveness probes (podman healthcheck run) pass"
# the Service's name from inside the network, as a client pod would use it
# (both replicas behind the alias; podman has no virtual IP, so DNS picks one)
fake=$kube_prefix-fake-healthy-0-fake
[ "$(podman exec "$fake" getent ahostsv4 sluice | awk '/STREAM/ {print $1}' | sort -u | wc -l)" = 2 ] ||
    fail "the name sluice does not resolve to both replicas: $(podman exec "$fake" getent ahostsv4 sluice)"
out=$(podman exec "$fake" curl -sS --max-time 5 -H 'content-type: application/json' \
    -d '{"jsonrpc":"2.0","id":1,"method":"eth_blockNumber","params":[]}' http://sluice:8545/eth)
[[ $out == *'"result":"0x'* ]] || fail "http://sluice:8545/eth from inside: $out"
say "http://sluice:8545/eth from another pod: answered (the name resolves to both replicas)"
wait_for "both hosts counted" sh -c "admin() { curl -sS --max-time 5 -H 'authorization: Bearer $token' \"\$@\"; }; admin $a0/readyz | grep -q '\"hosts\":2' && admin $a1/readyz | grep -q '\"hosts\":2'"
cluster() { admin "$1/readyz" | python3 -c 'import json, sys; c = json.load(sys.stdin)["cluster"]; print(c.get("mode"), c.get("hosts"), "hosts")'; }
say "cluster: replica 0 $(cluster "$a0"), replica 1 $(cluster "$a1")"

# ---- 4. a drain shared through Redis ----
out=$(admin -X POST "$a0/admin/endpoints/eth/secondary/drain")
[[ $out == *'"drained":true'* ]] || fail "drain on replica 0: $out"
wait_for "the drain on replica 1" sh -c "curl -sS --max-time 5 -H 'authorization: Bearer $token' $a1/admin/endpoints | python3 -c 'import json, sys; e = [x for x in json.load(sys.stdin) if x[\"id\"] == \"secondary\"]; sys.exit(0 if e and e[0].get(\"drained\") else 1)'"
wait_for "replica 1's feed" sh -c "curl -sS --max-time 5 -H 'authorization: Bearer $token' $a1/admin/events | grep -q '\"kind\":\"endpoint_drained\",[^}]*\"host\":\"$s0\"'"
say "secondary drained on replica 0: drained on replica 1, in its event feed from host $s0"

# ---- 5. SIGTERM drains ----
grace=$(python3 -c 'import sys, yaml
for d in yaml.safe_load_all(open(sys.argv[1])):
    if d["kind"] == "Pod": print(d["spec"]["terminationGracePeriodSeconds"]); break' "$pod_file")
# a call in flight when SIGTERM comes: the primary fake answers eth_gasPrice
# after 2 s (its probes, eth_blockNumber, stay fast)
podman exec "$kube_prefix-fake-healthy-0-fake" curl -fsS --max-time 5 -H 'content-type: application/json' \
    -d '{"mode":"slow","delay_ms":2000,"method":"eth_gasPrice"}' http://127.0.0.1:9000/_control/mode >/dev/null ||
    fail "slowing the primary fake down"
curl -sS --max-time 20 -H 'content-type: application/json' -d '{"jsonrpc":"2.0","id":7,"method":"eth_gasPrice","params":[]}' \
    "http://127.0.0.1:$http1/eth" >"$work/inflight.out" 2>&1 &
inflight=$!
sleep 0.5
t_stop=$(date +%s)
podman stop -t "$grace" "$s1-sluice" >/dev/null
took=$(($(date +%s) - t_stop))
wait "$inflight" || true
grep -q '"result":"0x' "$work/inflight.out" || fail "the call in flight at SIGTERM: $(cat "$work/inflight.out")"
[ "$(podman inspect -f '{{.State.ExitCode}}' "$s1-sluice")" = 0 ] || fail "replica 1 exited $(podman inspect -f '{{.State.ExitCode}}' "$s1-sluice") on SIGTERM"
[ "$took" -lt "$grace" ] || fail "replica 1 took ${took}s to stop (grace ${grace}s)"
# (the log in a file first: grep -q would end the pipe early, and pipefail fail it)
podman logs "$s1-sluice" >"$work/s1.log" 2>&1
grep -q 'stopping; workers drain' "$work/s1.log" || fail "replica 1 did not log its stop"
grep -q 'draining 1 request(s) in flight' "$work/s1.log" || fail "replica 1 did not drain the call in flight"
out=$(rpc "$http0")
[[ $out == *'"result":"0x'* ]] || fail "replica 0 stopped answering: $out"
say "SIGTERM to replica 1: its call in flight answered, exited 0 in ${took}s (grace ${grace}s); replica 0 answers"

# ---- 6. down ----
for ((i = ${#played[@]} - 1; i >= 0; i--)); do
    t_down=$(date +%s)
    podman kube down "${played[$i]}" >"$work/down.log" 2>&1 || { cat "$work/down.log"; fail "kube down $(basename "${played[$i]}")"; }
    say "kube down $(basename "${played[$i]}"): $(($(date +%s) - t_down))s"
done
[ -z "$(podman pod ls -q --filter "name=^$kube_prefix-")" ] || fail "pods left after kube down"
[ -z "$(run_containers)" ] || fail "containers left after kube down"
left=$(podman volume ls -q --filter "name=^$kube_prefix-" | xargs)
say "kube down: no pod left (volumes it keeps, as kubectl keeps a PVC: ${left:-none}); removed next"
