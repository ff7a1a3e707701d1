#!/usr/bin/env bash
# Builds the JVM library: the JNI cdylib (cargo, PROFILE debug|release, default debug), the
# classes (javac --release 17), and build/throttlekit.jar with the library inside at
# native/linux-x86_64/libthrottlekit_jvm.so (what the loader extracts). No Maven, no Gradle.
#   bindings-jvm/build.sh            # library + jar
#   bindings-jvm/build.sh --tests    # also the tests, the conformance runner, the bench, the
#                                    # quick start, and the Kotlin companion with its tests
#                                    # (build/throttlekit-kotlin.jar; kotlinc from install-tools.sh)
# Environment: PROFILE, CARGO_TARGET_DIR, CARGO_PROFILE_FLAGS (extra flags, e.g. --profile dist).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
PROFILE=${PROFILE:-debug}
TARGET=${CARGO_TARGET_DIR:-$ROOT/target}
FLAGS=${CARGO_PROFILE_FLAGS:-}
if [ -z "$FLAGS" ] && [ "$PROFILE" = release ]; then FLAGS=--release; fi
(cd "$ROOT" && cargo build -q --locked -p throttlekit-jvm $FLAGS)
LIB=$TARGET/$PROFILE/libthrottlekit_jvm.so
B=$HERE/build
rm -rf "$B/classes" "$B/jar"
mkdir -p "$B/classes" "$B/jar/native/linux-x86_64"
javac -d "$B/classes" --release 17 -Xlint:all -Werror $(find "$HERE/java" -name '*.java')
cp -r "$B/classes/." "$B/jar/"
cp "$LIB" "$B/jar/native/linux-x86_64/libthrottlekit_jvm.so"
VERSION=$(sed -n 's/^version = "\(.*\)"/\1/p' "$ROOT/Cargo.toml" | head -1)
printf 'Implementation-Title: throttlekit\nImplementation-Version: %s\nAutomatic-Module-Name: dev.throttlekit\n' "$VERSION" >"$B/manifest.txt"
jar --create --file "$B/throttlekit.jar" --manifest "$B/manifest.txt" -C "$B/jar" .
# The servlet API and embedded Jetty 9, from Debian (install-tools.sh).
servlet_classpath() {
    local j=/usr/share/java
    echo "$j/servlet-api.jar:$j/jetty9-server.jar:$j/jetty9-servlet.jar:$j/jetty9-security.jar:$j/jetty9-http.jar:$j/jetty9-io.jar:$j/jetty9-util.jar"
}
if [ "${1:-}" = "--tests" ]; then
    J=/usr/share/java/junit-platform-console-standalone.jar
    rm -rf "$B/test" "$B/tools"
    javac -d "$B/test" -cp "$B/classes:$J" --release 17 $(find "$HERE/test" -name '*.java')
    javac -d "$B/tools" -cp "$B/classes:/usr/share/java/guava.jar" --release 17 -Xlint:all \
        $(find "$HERE/conformance" "$HERE/bench" "$HERE/example" -name '*.java')
    # The servlet filter (javax.servlet, Debian's servlet-api) as a jar of its own.
    rm -rf "$B/servlet"
    javac -d "$B/servlet" -cp "$B/classes:/usr/share/java/servlet-api.jar" --release 17 -Xlint:all -Werror \
        $(find "$HERE/servlet" -name '*.java')
    jar --create --file "$B/throttlekit-servlet.jar" -C "$B/servlet" .
    # Its tests run it on an embedded Jetty (Debian's jetty9; test.sh puts the same jars on the path).
    rm -rf "$B/servlet-test"
    javac -d "$B/servlet-test" -cp "$B/classes:$B/servlet:$J:$(servlet_classpath)" --release 17 \
        $(find "$HERE/servlet-test" -name '*.java')
    # One kotlinc run for the companion and its tests (each run costs ~20 s of JVM start-up).
    K=$HERE/.tools/node_modules/kotlin-compiler
    rm -rf "$B/kotlin" "$B/kotlin-jar"
    "$K/bin/kotlinc" -jvm-target 17 -nowarn -d "$B/kotlin" \
        -cp "$B/classes:$J:$K/lib/kotlinx-coroutines-core-jvm.jar" \
        $(find "$HERE/kotlin" "$HERE/kotlin-test" -name '*.kt')
    mkdir -p "$B/kotlin-jar/dev/throttlekit/kotlin"
    cp "$B"/kotlin/dev/throttlekit/kotlin/ThrottleKitKt*.class "$B/kotlin-jar/dev/throttlekit/kotlin/"
    jar --create --file "$B/throttlekit-kotlin.jar" -C "$B/kotlin-jar" .
fi
