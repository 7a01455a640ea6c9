#!/usr/bin/env bash
# Installs what sluice needs, from Debian packages only. Used by the README,
# .ci/run (through tests/run-all.sh) and deploy/Dockerfile. Idempotent: an
# installed package is not fetched again.
#
#   deploy/install-deps.sh            everything: build, run, test, benchmark
#   deploy/install-deps.sh --build    what compiling sluice needs
#   deploy/install-deps.sh --runtime  what the sluice binary needs at run time
set -euo pipefail

runtime=(libh2o-evloop0.13 libssl3 libcjson1 libyaml-0-2 liblmdb0 libmsgpackc2 libhiredis0.14 libwslay1 ca-certificates)
build=(build-essential cmake pkg-config
       libh2o-evloop-dev libwslay-dev libssl-dev libcjson-dev libyaml-dev liblmdb-dev libmsgpack-dev libhiredis-dev)
test=(libcriterion-dev clang libclang-rt-14-dev
      openssl curl procps util-linux lmdb-utils wrk nginx-light docker-compose git chromium
      podman podman-compose catatonit runc netavark aardvark-dns iptables debootstrap
      prometheus python3-jsonschema redis-server strace valgrind)
node=(nodejs npm)

mode=${1:-all}
case "$mode" in
    --runtime) want=("${runtime[@]}") ;;
    --build)   want=("${runtime[@]}" "${build[@]}") ;;
    all)       want=("${runtime[@]}" "${build[@]}" "${test[@]}")
               # Node 20 may come from elsewhere than Debian; keep it when present
               command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1 || want+=("${node[@]}") ;;
    *) echo "usage: $0 [--build|--runtime]" >&2; exit 2 ;;
esac

missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ "${#missing[@]}" -eq 0 ] && exit 0

sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# nginx-light starts nginx on :80 after install where an init system runs; the
# benchmark starts its own nginx, so keep the packaged service from starting.
if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $sudo tee /usr/sbin/policy-rc.d >/dev/null
    $sudo chmod +x /usr/sbin/policy-rc.d
    trap '$sudo rm -f /usr/sbin/policy-rc.d' EXIT
fi
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
