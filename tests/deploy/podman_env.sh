# Sourced by the podman tests: podman's configuration for this run only
# (in "$work", which the caller made), free_port, base_image, and what a run
# made and its clean-up. Needs $work set; say, fail and t0 from the caller.
cat >"$work/containers.conf" <<'CONF'
[containers]
default_ulimits = []
[engine]
cgroup_manager = "cgroupfs"
runtime = "runc"
events_logger = "file"
[network]
network_backend = "netavark"
CONF
export CONTAINERS_CONF=$work/containers.conf

free_port() { node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }

# base_image: localhost/debian:bookworm-slim, a bare Debian (debootstrap
# minbase) from the mirror apt uses here: no registry is reachable. Made once,
# kept once imported. Needs say and fail from the caller.
base_image() {
    podman image exists localhost/debian:bookworm-slim && return 0
    local mirror
    mirror=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
    [ -n "$mirror" ] || mirror=$(awk '/^deb /{print $2; exit}' /etc/apt/sources.list)
    say "base image: debootstrap bookworm from $mirror"
    debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 ||
        { tail -20 "$work/debootstrap.log"; fail "debootstrap"; }
    tar -C "$work/rootfs" -c . | podman import - debian:bookworm-slim >/dev/null
    rm -rf "$work/rootfs"
}

# ---- what a run made, and its clean-up ----
# A run is either the compose project $project (deploy/docker-compose.yml,
# $compose_file), the pods named $kube_prefix-* (tests/deploy/kube.sh) or the
# one container named $name. It installs the clean-up with `trap
# podman_cleanup EXIT`; $log_lines (30 unless set) is how much of each
# container's output a failed run shows.
compose() { podman-compose -p "$project" -f "$compose_file" "$@"; }

# The ids of the run's containers, running or not; with a service name, only
# that service's (compose runs).
run_containers() {
    if [ -n "${kube_prefix:-}" ]; then   # tests/deploy/kube.sh: its pods' containers
        podman ps -aq --filter "name=^$kube_prefix-"
    elif [ -z "${project:-}" ]; then
        podman ps -aq --filter "name=^$name\$"
    elif [ -n "${1:-}" ]; then
        podman ps -aq --filter "label=io.podman.compose.project=$project" --filter "label=com.docker.compose.service=$1"
    else
        podman ps -aq --filter "label=io.podman.compose.project=$project"
    fi
}

# The EXIT trap: removes whatever the run made even when a step failed (its
# containers with their anonymous volumes, and for a compose run the
# project's volumes and networks), then $work; prints the wall time and
# exits with the run's status. A failed run first shows its containers' logs.
# $cleanup_more, if set, names a function that removes the rest (pods,
# volumes, secrets, networks) before $work goes.
podman_cleanup() {
    local rc=$? c
    set +e
    if [ "$rc" -ne 0 ]; then
        say "logs of the failed run:"
        [ -z "${project:-}" ] || podman ps -a --filter "label=io.podman.compose.project=$project"
        for c in $(run_containers); do
            podman logs --tail "${log_lines:-30}" "$c" 2>&1
        done
    fi
    # -v: the image declares VOLUME, so every container has an anonymous one too
    run_containers | xargs -r podman rm -f -v -t 2 >/dev/null 2>&1
    if [ -n "${project:-}" ]; then
        compose down -v -t 2 >/dev/null 2>&1
        podman volume ls -q --filter "label=io.podman.compose.project=$project" | xargs -r podman volume rm -f >/dev/null 2>&1
        podman network ls -q --filter "label=io.podman.compose.project=$project" | xargs -r podman network rm -f >/dev/null 2>&1
    fi
    [ -z "${cleanup_more:-}" ] || "$cleanup_more"
    rm -rf "$work"
    say "wall time $(($(date +%s) - t0)) s ($([ "$rc" -eq 0 ] && echo passed || echo failed))"
    exit "$rc"
}
