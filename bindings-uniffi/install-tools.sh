#!/usr/bin/env bash
# Installs what the uniffi bindings' build and tests need, when it is missing (idempotent):
#   apt: ruby, ruby-ffi (Ruby's FFI gem), libjna-java (JNA, what uniffi's Kotlin calls through),
#        libguava-java (the bench's peer), default-jdk-headless (javac/java 17) if absent;
#   npm: kotlin-compiler (kotlinc for the JVM and kotlinx-coroutines-core-jvm), pinned, into
#        bindings-uniffi/.tools (gitignored).
# Prints nothing but what it installs.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
KOTLIN_VERSION=2.2.21

need=()
command -v ruby >/dev/null || need+=(ruby)
ruby -e 'require "ffi"' 2>/dev/null || need+=(ruby-ffi)
[ -f /usr/share/java/jna.jar ] || need+=(libjna-java)
[ -f /usr/share/java/guava.jar ] || need+=(libguava-java)
command -v javac >/dev/null || need+=(default-jdk-headless)
command -v npm >/dev/null || need+=(npm)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

KOTLINC=$HERE/.tools/node_modules/kotlin-compiler/bin/kotlinc
if ! [ -x "$KOTLINC" ] || ! grep -q "\"version\": \"$KOTLIN_VERSION\"" "$HERE/.tools/node_modules/kotlin-compiler/package.json"; then
    echo "installing: kotlin-compiler@$KOTLIN_VERSION (npm, into $HERE/.tools)"
    mkdir -p "$HERE/.tools"
    npm install --prefix "$HERE/.tools" --no-audit --no-fund --no-save --loglevel=error "kotlin-compiler@$KOTLIN_VERSION" >/dev/null
fi
