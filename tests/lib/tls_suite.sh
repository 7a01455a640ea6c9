#!/bin/sh
# tests/lib/tls_suite.sh: runs one integration test file with every sluice
# the harness starts serving its clients over TLS (ctest's tls/<name> tests).
# A self-signed certificate for 127.0.0.1 is made for this run; node trusts
# it (NODE_EXTRA_CA_CERTS), and the harness (SLUICE_TEST_TLS_DIR) puts it in
# each config's server.tls and hands the tests https:// URLs.
# Usage: tls_suite.sh NODE TEST_FILE
set -eu
node=$1
file=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/sluice-tls-suite-XXXXXX")
trap 'rm -rf "$dir"' EXIT
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/key.pem" -out "$dir/cert.pem" -days 2 \
    -subj /CN=sluice-test -addext subjectAltName=IP:127.0.0.1,DNS:localhost 2>/dev/null
SLUICE_TEST_TLS_DIR=$dir NODE_EXTRA_CA_CERTS=$dir/cert.pem \
    "$node" --test --test-timeout=180000 --test-reporter=spec "$file"
