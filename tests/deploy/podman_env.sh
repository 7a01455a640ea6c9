# Sourced by the compose tests: podman's configuration for this run only
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
