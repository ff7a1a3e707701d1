#!/usr/bin/env bash
# The Kotlin bench (kotlin/bench/Bench.kt): checkBlocking on the memory store vs Guava's
# RateLimiter, 1 key and 100k keys, against the release library. Part of `make bench`.
#   bindings-uniffi/bench.sh [--quick]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
LIBDIR=${CARGO_TARGET_DIR:-$ROOT/target}/release
make -s -C "$HERE" kotlin PROFILE=release >/dev/null
K=$HERE/.tools/node_modules/kotlin-compiler/lib
CP=$HERE/build/throttlekit-tools.jar:$HERE/build/throttlekit.jar:/usr/share/java/jna.jar:/usr/share/java/guava.jar
CP=$CP:$K/kotlinx-coroutines-core-jvm.jar:$K/kotlin-stdlib.jar
exec java -Djna.library.path="$LIBDIR" -cp "$CP" dev.throttlekit.bench.BenchKt "$@"
