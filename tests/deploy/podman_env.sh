# Sourced by the podman tests: podman's configuration for this run only
# (in "$work", which the caller made), and free_port. Needs $work set.
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
