#!/usr/bin/env bash
# Installs what the uniffi Ruby binding's build and tests need, when it is missing (idempotent):
# apt: ruby and ruby-ffi (Ruby's FFI gem). Prints nothing but what it installs.
set -euo pipefail

need=()
command -v ruby >/dev/null || need+=(ruby)
ruby -e 'require "ffi"' 2>/dev/null || need+=(ruby-ffi)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
