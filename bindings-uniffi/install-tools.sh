#!/usr/bin/env bash
# Installs what the uniffi Ruby binding's build and tests need, when it is missing (idempotent):
# apt: ruby, ruby-ffi (Ruby's FFI gem), ruby-rack and puma (the Rack middleware's tests and example),
# postgresql-15 and its client (the PostgresStore tests: tests/postgres-server.sh, psql). Prints
# nothing but what it installs.
set -euo pipefail

need=()
command -v ruby >/dev/null || need+=(ruby)
ruby -e 'require "ffi"' 2>/dev/null || need+=(ruby-ffi)
# Throttlekit::Rack's tests and the ruby-rack example: Rack and the puma server.
ruby -e 'require "rack"' 2>/dev/null || need+=(ruby-rack)
command -v puma >/dev/null || need+=(puma)
[ -x /usr/lib/postgresql/15/bin/initdb ] && command -v psql >/dev/null || need+=(postgresql-15 postgresql-client-15)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
