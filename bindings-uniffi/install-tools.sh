#!/usr/bin/env bash
# Installs what the uniffi Ruby binding's build and tests need, when it is missing (idempotent):
# apt: ruby, ruby-ffi (Ruby's FFI gem), ruby-rack and puma (the Rack middleware's tests and example). Prints nothing but what it installs.
set -euo pipefail

need=()
command -v ruby >/dev/null || need+=(ruby)
ruby -e 'require "ffi"' 2>/dev/null || need+=(ruby-ffi)
# Throttlekit::Rack's tests and the ruby-rack example: Rack and the puma server.
ruby -e 'require "rack"' 2>/dev/null || need+=(ruby-rack)
command -v puma >/dev/null || need+=(puma)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
