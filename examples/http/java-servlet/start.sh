#!/usr/bin/env bash
# java-servlet: dev.throttlekit.servlet.RateLimitFilter on Debian's Jetty 9, embedded
# (ServletExample.java). On first run it installs what is missing (bindings-jvm/install-tools.sh:
# the JDK, Jetty and the servlet API from Debian), builds the jar (bindings-jvm/build.sh) and
# compiles the filter and the example into $CARGO_TARGET_DIR/java-servlet, then execs `java`
# itself, so the PID you started is the server's.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
"$ROOT/bindings-jvm/install-tools.sh" >&2
"$ROOT/bindings-jvm/build.sh" >&2
OUT=$CARGO_TARGET_DIR/java-servlet
J=/usr/share/java
CP=$ROOT/bindings-jvm/build/throttlekit.jar:$J/servlet-api.jar:$J/jetty9-server.jar:$J/jetty9-servlet.jar:$J/jetty9-security.jar:$J/jetty9-http.jar:$J/jetty9-io.jar:$J/jetty9-util.jar
rm -rf "$OUT"
mkdir -p "$OUT"
javac -d "$OUT" -cp "$CP" --release 17 "$ROOT/bindings-jvm/servlet/dev/throttlekit/servlet/RateLimitFilter.java" "$HERE/ServletExample.java" >&2
exec java -Dthrottlekit.tmpdir="$OUT/native" -cp "$OUT:$CP" ServletExample "$1"
