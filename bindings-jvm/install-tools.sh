#!/usr/bin/env bash
# Installs what the JVM library's build and tests need, when it is missing (idempotent), all
# from Debian: a JDK 17 (javac, java, jar), junit5 (the console launcher), libguava-java (the
# bench's peer), libjetty9-java and libservlet-api-java (the servlet filter's container).
# Prints nothing but what it installs.
set -euo pipefail
need=()
command -v javac >/dev/null || need+=(openjdk-17-jdk-headless)
command -v jar >/dev/null || need+=(openjdk-17-jdk-headless)
[ -f /usr/share/java/junit-platform-console-standalone.jar ] || need+=(junit5)
[ -f /usr/share/java/guava.jar ] || need+=(libguava-java)
[ -f /usr/share/java/jetty9-server.jar ] || need+=(libjetty9-java)
[ -f /usr/share/java/servlet-api.jar ] || need+=(libservlet-api-java)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    SUDO=""
    [ "$(id -u)" -eq 0 ] || SUDO="sudo"
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
