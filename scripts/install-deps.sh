#!/usr/bin/env bash
# Installs the system packages the test suites need, when they are missing: a Redis server
# (the tests start their own on a free loopback port), Go (the cgo package), cJSON and
# pkg-config (the C conformance runner), valgrind (the C tests), Node.js and npm, openssl (the
# TLS tests make a throwaway CA).
# Idempotent: a machine that has everything installs nothing.
set -euo pipefail

need=()
command -v redis-server >/dev/null || need+=(redis-server)
# The Postgres store's tests (tests/postgres-server.sh runs initdb and postgres from here; psql for setup).
[ -x /usr/lib/postgresql/15/bin/initdb ] && command -v psql >/dev/null || need+=(postgresql-15 postgresql-client-15)
command -v pgrep >/dev/null || need+=(procps)
command -v redis-cli >/dev/null || need+=(redis-tools)
command -v redis-benchmark >/dev/null || need+=(redis-tools)
command -v go >/dev/null || need+=(golang-go)
command -v pkg-config >/dev/null || need+=(pkg-config)
[ -e /usr/include/cjson/cJSON.h ] || need+=(libcjson-dev)
command -v valgrind >/dev/null || need+=(valgrind)
command -v openssl >/dev/null || need+=(openssl)
command -v node >/dev/null || need+=(nodejs)
command -v npm >/dev/null || need+=(npm)
command -v cc >/dev/null || need+=(gcc)
command -v make >/dev/null || need+=(make)
# Headless Chromium: the WebAssembly build's vectors replayed in a browser (bindings-wasm/test.sh).
command -v chromium >/dev/null || need+=(chromium)

if [ ${#need[@]} -eq 0 ]; then
  echo "system packages: all present"
  exit 0
fi
echo "system packages: installing ${need[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
