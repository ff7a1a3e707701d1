#!/usr/bin/env bash
# Installs what the JVM library's build and tests need, when it is missing (idempotent):
# from Debian, a JDK 17 (javac, java, jar), junit5 (the console launcher), libguava-java (the
# bench's peer), libjetty9-java and libservlet-api-java (the servlet filter's container),
# postgresql-15 and its client (the PostgresStore tests: tests/postgres-server.sh, psql); and
# npm's kotlin-compiler for the Kotlin companion.
# Prints nothing but what it installs.
set -euo pipefail
need=()
command -v javac >/dev/null || need+=(openjdk-17-jdk-headless)
command -v jar >/dev/null || need+=(openjdk-17-jdk-headless)
[ -f /usr/share/java/junit-platform-console-standalone.jar ] || need+=(junit5)
[ -f /usr/share/java/guava.jar ] || need+=(libguava-java)
[ -f /usr/share/java/jetty9-server.jar ] || need+=(libjetty9-java)
[ -f /usr/share/java/servlet-api.jar ] || need+=(libservlet-api-java)
[ -x /usr/lib/postgresql/15/bin/initdb ] && command -v psql >/dev/null || need+=(postgresql-15 postgresql-client-15)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# The Kotlin companion's compiler: npm's kotlin-compiler (kotlinc for the JVM, with
# kotlin-stdlib and kotlinx-coroutines-core-jvm in its lib/), pinned, into bindings-jvm/.tools.
KOTLIN_VERSION=2.2.21
HERE=$(cd "$(dirname "$0")" && pwd)
KOTLINC=$HERE/.tools/node_modules/kotlin-compiler/bin/kotlinc
if ! [ -x "$KOTLINC" ] || ! grep -q "\"version\": \"$KOTLIN_VERSION\"" "$HERE/.tools/node_modules/kotlin-compiler/package.json"; then
    command -v npm >/dev/null || { echo "npm is missing (scripts/install-deps.sh installs it)" >&2; exit 1; }
    echo "installing: kotlin-compiler@$KOTLIN_VERSION (npm, into $HERE/.tools)"
    mkdir -p "$HERE/.tools"
    npm install --prefix "$HERE/.tools" --no-audit --no-fund --no-save --loglevel=error "kotlin-compiler@$KOTLIN_VERSION" >/dev/null
fi
