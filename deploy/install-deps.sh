#!/usr/bin/env bash
# Installs everything sluice needs to build, run and test, from Debian packages
# and npm. Used by the README, .ci/run and deploy/Dockerfile. Idempotent.
#   deploy/install-deps.sh           build + run + test dependencies
#   deploy/install-deps.sh --runtime only what the sluice binary needs at run time
set -euo pipefail

runtime=(libh2o-evloop0.13 libssl3 libcjson1 libyaml-0-2 liblmdb0 libmsgpackc2 ca-certificates)
build=(build-essential cmake pkg-config git
       libh2o-evloop-dev libssl-dev libcjson-dev libyaml-dev liblmdb-dev libmsgpack-dev
       libcriterion-dev clang libclang-rt-14-dev
       wrk nginx-light openssl curl procps util-linux lmdb-utils
       nodejs npm docker-compose)

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

want=("${runtime[@]}")
if [ "${1:-}" != "--runtime" ]; then want+=("${build[@]}"); fi

missing=()
for p in "${want[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# Node 20 may come from elsewhere than Debian's package; keep it if present.
if command -v node >/dev/null 2>&1; then
    tmp=(); for p in "${missing[@]}"; do case "$p" in nodejs|npm) ;; *) tmp+=("$p");; esac; done
    missing=("${tmp[@]+"${tmp[@]}"}")
fi
if [ "${#missing[@]}" -gt 0 ]; then
    echo "install-deps: installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    $sudo apt-get update -q
    $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
