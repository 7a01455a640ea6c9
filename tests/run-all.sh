#!/usr/bin/env bash
# Installs, builds and runs every test of sluice. The README's second command;
# .ci/run calls it as is.
#
#   1. dependencies (Debian packages, npm packages for the e2e clients)
#   2. normal build (-Werror), every ctest test: unit, integration, e2e;
#      then a Debug build, compiled but not run
#   3. the README's first command (deploy/demo.sh) in a bare Debian container
#      (tests/deploy/fresh_machine.sh), once
#   4. deploy/docker-compose.yml run for real with podman (tests/deploy/compose.sh
#      and compose_cluster.sh), then deploy/k8s/ with podman kube play
#      (tests/deploy/kube.sh, on the images they built), once
#   5. AddressSanitizer + UndefinedBehaviorSanitizer build, every test again
#   6. libFuzzer smoke: each fuzz target for SLUICE_FUZZ_SECONDS (default 60)
#   at the end, passed or failed: how long each phase took
#
# Environment: SLUICE_SKIP_ASAN=1, SLUICE_SKIP_FUZZ=1, SLUICE_SKIP_FRESH=1,
# SLUICE_SKIP_COMPOSE=1 (which skips tests/deploy/kube.sh too), SLUICE_SKIP_KUBE=1
# shorten a local run (CI sets none of them); SLUICE_JOBS (default 2) for the
# compiler.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
jobs=${SLUICE_JOBS:-2}
fuzz_seconds=${SLUICE_FUZZ_SECONDS:-60}

# step NAME: a phase starts (the one before ends). At exit, passed or not, a
# table of how long each phase took: the README's time figures come from it.
phases=() phase_start=() t_start=$(date +%s)
step() {
    printf '\n=== %s (%s)\n' "$*" "$(date -u +%H:%M:%S)"
    phases+=("$*"); phase_start+=("$(date +%s)")
}
phase_times() {
    local rc=$? i end n=${#phases[@]}
    printf '\n=== phase times (%s)\n' "$([ "$rc" -eq 0 ] && echo passed || echo "failed, exit $rc")"
    for ((i = 0; i < n; i++)); do
        end=$(date +%s); [ $((i + 1)) -lt "$n" ] && end=${phase_start[i + 1]}
        printf '%6d s  %s\n' $((end - phase_start[i])) "${phases[i]}"
    done
    printf '%6d s  in all\n' $(($(date +%s) - t_start))
}
trap phase_times EXIT

step "dependencies"
# every optional-looking tool is installed below: tests must not skip for want of one
export SLUICE_REQUIRE_ALL=1
deploy/install-deps.sh
(cd tests && npm ci --no-audit --no-fund --loglevel=error)

run_suite() {   # build dir, cmake flags...
    local dir=$1; shift
    cmake -S "$root" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DSLUICE_TESTS=ON "$@" >/dev/null
    cmake --build "$dir" -j "$jobs"
    # Tests start real processes on ephemeral ports and some measure timeouts:
    # one at a time keeps them honest on 2 cores.
    (cd "$dir" && ctest --output-on-failure --timeout 900)
}

step "build and test"
run_suite build

# Debug (-O0) links differently from the optimised builds (nothing is
# inlined: libm calls stay calls). Compiled only, not run, to keep CI short.
step "Debug build (compile only)"
cmake -S "$root" -B build-debug -DCMAKE_BUILD_TYPE=Debug -DSLUICE_TESTS=ON >/dev/null
cmake --build build-debug -j "$jobs"

if [ "${SLUICE_SKIP_FRESH:-0}" != 1 ]; then
    step "the README's first command on a fresh machine (bare bookworm container: deploy/demo.sh)"
    tests/deploy/fresh_machine.sh
fi

if [ "${SLUICE_SKIP_COMPOSE:-0}" != 1 ]; then
    step "docker-compose.yml with podman (image build, up, worker kill, down/up, down)"
    tests/deploy/compose.sh
    step "docker-compose.yml's cluster profile with podman (two hosts and Redis: drain shared, Redis stopped and started)"
    tests/deploy/compose_cluster.sh
    if [ "${SLUICE_SKIP_KUBE:-0}" != 1 ]; then
        step "deploy/k8s/ with podman kube play (Redis, fakes, two replicas: drain shared, SIGTERM drains, kube down)"
        tests/deploy/kube.sh
    fi
fi

if [ "${SLUICE_SKIP_ASAN:-0}" != 1 ]; then
    step "build and test under ASan + UBSan"
    export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1:strict_string_checks=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    run_suite build-asan -DSLUICE_SANITIZE=ON
    unset ASAN_OPTIONS UBSAN_OPTIONS
fi

if [ "${SLUICE_SKIP_FUZZ:-0}" != 1 ]; then
    step "fuzz smoke (${fuzz_seconds}s per target)"
    CC=clang cmake -S "$root" -B build-fuzz -DSLUICE_FUZZ=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
    cmake --build build-fuzz -j "$jobs" --target all
    nfuzz=0
    for fuzzer in build-fuzz/tests/fuzz/fuzz_*; do
        [ -x "$fuzzer" ] || continue
        nfuzz=$((nfuzz + 1))
        name=$(basename "$fuzzer"); name=${name#fuzz_}
        corpus=$(mktemp -d)
        [ -d "tests/fuzz/corpus/$name" ] && cp -r "tests/fuzz/corpus/$name/." "$corpus/"
        echo "--- $fuzzer"
        rc=0
        "$fuzzer" -max_total_time="$fuzz_seconds" -print_final_stats=1 -artifact_prefix="$corpus/" "$corpus" \
            >"$corpus.log" 2>&1 || rc=$?
        grep -E "^(stat::number_of_executed_units|Done)" "$corpus.log" || true
        if [ "$rc" -ne 0 ]; then
            echo "fuzz target $name failed (exit $rc):"; tail -40 "$corpus.log"; ls "$corpus"/crash-* 2>/dev/null || true
            exit 1
        fi
        rm -f "$corpus.log"
        rm -rf "$corpus"
    done
    if [ "$nfuzz" -lt 5 ]; then
        echo "only $nfuzz fuzz target(s) were built (expected 5): libFuzzer missing?"; exit 1
    fi
fi

step "all tests passed"
