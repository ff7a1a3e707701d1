#!/usr/bin/env bash
# dist/throttlekit-V.jar: the JVM library (Java 17 classes, javac --release 17) with the
# zig-linked dist build of its JNI library inside at native/linux-x86_64/libthrottlekit_jvm.so,
# which the loader extracts and loads (bindings-jvm/README.md, "Loading the native library").
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

if ! command -v javac >/dev/null || ! command -v jar >/dev/null; then
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends openjdk-17-jdk-headless >/dev/null
fi

tree=$STAGE/jvm
rm -rf "$tree"
mkdir -p "$tree/classes/native/linux-x86_64"
javac -d "$tree/classes" --release 17 -Xlint:all -Werror $(find "$ROOT/bindings-jvm/java" -name '*.java')
install -m 755 "$NATIVE_OUT/libthrottlekit_jvm.so" "$tree/classes/native/linux-x86_64/libthrottlekit_jvm.so"
install -m 644 "$ROOT/LICENSE" "$tree/classes/LICENSE"
printf 'Implementation-Title: throttlekit\nImplementation-Version: %s\nAutomatic-Module-Name: dev.throttlekit\n' "$VERSION" \
    >"$tree/manifest.txt"
jar --create --file "$DIST/throttlekit-$VERSION.jar" --manifest "$tree/manifest.txt" -C "$tree/classes" .
