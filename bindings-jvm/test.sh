#!/usr/bin/env bash
# Everything CI runs for the JVM library, from a fresh machine:
#   1. installs what is missing (install-tools.sh: JDK 17, junit5, Guava, Jetty; all Debian)
#   2. builds the cdylib, the classes and build/throttlekit.jar (build.sh), the tests and tools
#   3. starts a disposable redis-server (tests/redis-server.sh) and Postgres 15
#      (tests/postgres-server.sh), stopped by PID on exit
#   4. the JUnit 5 tests (Java, the servlet filters' on embedded Jetty, and the Kotlin companion's) through Debian's console launcher,
#      totals printed as `N passed, M failed`
#   5. the conformance runner replays every conformance-vectors/*.json on memory and Redis,
#      blocking and through the futures, then on a cluster, Sentinel, TLS and mutual TLS, and
#      must report the Rust CLI's totals on each; on Postgres and on SQLite (a temp file); and the
#      adaptive vectors (conformance-vectors/adaptive)
#   6. the README's quick start is example/QuickStart.java, and it runs
# Environment: PROFILE (debug|release, default debug), CARGO_TARGET_DIR.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export PROFILE=${PROFILE:-debug}
step() { printf '\n== %s\n' "$*"; }

step "tools"
"$HERE/install-tools.sh"

step "build (cdylib, classes, jar, tests, runner)"
"$HERE/build.sh" --tests

WORK=$(mktemp -d)
cleanup() {
    "$ROOT/tests/redis-server.sh" stop "$WORK/redis.pid" || true
    "$ROOT/tests/postgres-server.sh" stop "$WORK/postgres.pid" || true
    "$ROOT/tests/redis-cluster.sh" stop "$WORK/cluster.pids" || true
    "$ROOT/tests/redis-sentinels.sh" stop "$WORK/sentinel" || true
    "$ROOT/tests/redis-sentinels.sh" stop "$WORK/sentinel-pw" || true
    "$ROOT/tests/redis-tls.sh" stop "$WORK/tls" || true
    "$ROOT/tests/redis-tls.sh" stop "$WORK/mtls" || true
    rm -rf "$WORK" || true
}
trap cleanup EXIT
step "start a disposable redis-server"
URL=$("$ROOT/tests/redis-server.sh" start "$WORK/redis.pid")
echo "$URL (pid $(cat "$WORK/redis.pid"))"
step "start a disposable Postgres 15 (PostgresStoreTest and the runner)"
PG_URL=$("$ROOT/tests/postgres-server.sh" start "$WORK/postgres.pid")
echo "$PG_URL (pid $(cut -d' ' -f1 "$WORK/postgres.pid"))"

# Sentinels that require a password (sentinelPassword), whose master has a replica (durable charges).
SENTINEL_PW_URLS=$(SENTINEL_PASSWORD=spw "$ROOT/tests/redis-sentinels.sh" start "$WORK/sentinel-pw")

step "JUnit 5 (console launcher): the Java tests and the Kotlin companion's"
B=$HERE/build
K=$HERE/.tools/node_modules/kotlin-compiler/lib
J=/usr/share/java
JETTY=$J/servlet-api.jar:$J/jetty9-server.jar:$J/jetty9-servlet.jar:$J/jetty9-security.jar:$J/jetty9-http.jar:$J/jetty9-io.jar:$J/jetty9-util.jar
CP=$B/throttlekit.jar:$B/test:$B/kotlin:$K/kotlin-stdlib.jar:$K/kotlinx-coroutines-core-jvm.jar:$B/servlet:$B/servlet-test:$JETTY
set +e
java -Dthrottlekit.tmpdir="$WORK/native" -Dthrottlekit.test.redis="$URL" -Dthrottlekit.test.postgres="$PG_URL" -Dthrottlekit.test.classpath="$CP" \
    -Dthrottlekit.test.sentinels.password="$SENTINEL_PW_URLS" \
    -jar /usr/share/java/junit-platform-console-standalone.jar -cp "$CP" --scan-classpath \
    --disable-banner --details=summary --disable-ansi-colors >"$WORK/junit.log" 2>&1
status=$?
set -e
passed=$(sed -n 's/^\[ *\([0-9]*\) tests successful *\]$/\1/p' "$WORK/junit.log")
failed=$(sed -n 's/^\[ *\([0-9]*\) tests failed *\]$/\1/p' "$WORK/junit.log")
[ "$status" -eq 0 ] && [ "${failed:-1}" = 0 ] || cat "$WORK/junit.log"
echo "${passed:-0} passed, ${failed:-?} failed"
# `|| exit 1`: set -e does not stop at a failing test before the list's last `&&`.
[ "$status" -eq 0 ] && [ "${failed:-1}" = 0 ] && [ "${passed:-0}" -gt 0 ] || exit 1

step "the Rust CLI's totals on the same files"
VECTORS=("$ROOT"/conformance-vectors/*.json)
RUST=$(cd "$ROOT" && cargo run -q --locked -p throttlekit-cli --bin throttlekit -- conformance "${VECTORS[@]}" | tail -1)
echo "rust: $RUST"

step "conformance runner: memory and Redis, blocking and futures"
run_runner() {
    local name=$1
    shift
    local out last
    out=$("$HERE/tk-conformance" "$@" "${VECTORS[@]}" | tail -20) || { echo "$out"; echo "$name failed" >&2; exit 1; }
    last=$(tail -1 <<<"$out")
    echo "$name: $last"
    [ "$last" = "$RUST" ] || { echo "$name reported '$last', the Rust CLI '$RUST'" >&2; exit 1; }
}
run_runner "java memory" --store memory
run_runner "java memory (futures)" --store memory --api async
run_runner "java redis" --store redis --redis-url "$URL"
run_runner "java redis (futures)" --store redis --redis-url "$URL" --api async

step "conformance runner: Postgres and SQLite"
run_runner "java postgres" --store postgres --postgres-url "$PG_URL"
run_runner "java sqlite" --store sqlite --sqlite-path "$WORK/vectors.db"

step "conformance runner: the adaptive concurrency vectors (no store)"
ADAPTIVE=("$ROOT"/conformance-vectors/adaptive/*.json)
RUST_ADAPTIVE=$(cd "$ROOT" && cargo run -q --locked -p throttlekit-cli --bin throttlekit -- conformance "${ADAPTIVE[@]}" | tail -1)
out=$("$HERE/tk-conformance" "${ADAPTIVE[@]}" | tail -20) || { echo "$out"; exit 1; }
echo "java adaptive: $(tail -1 <<<"$out")"
[ "$(tail -1 <<<"$out")" = "$RUST_ADAPTIVE" ] || { echo "java adaptive reported '$(tail -1 <<<"$out")', the Rust CLI '$RUST_ADAPTIVE'" >&2; exit 1; }

step "conformance runner: a 3-master cluster, Sentinel, TLS and mutual TLS (the CLI's flags)"
CLUSTER_URLS=$("$ROOT/tests/redis-cluster.sh" start "$WORK/cluster.pids")
SENTINEL_URLS=$("$ROOT/tests/redis-sentinels.sh" start "$WORK/sentinel")
TLS_URL=$("$ROOT/tests/redis-tls.sh" start "$WORK/tls" 2>/dev/null)
MTLS_URL=$(MUTUAL=1 "$ROOT/tests/redis-tls.sh" start "$WORK/mtls" 2>/dev/null)
run_runner "java redis-cluster" --store redis-cluster --redis-url "$CLUSTER_URLS"
run_runner "java redis-sentinel" --store redis-sentinel --redis-url "$SENTINEL_URLS" --redis-service-name tkmain
run_runner "java redis TLS" --store redis --redis-url "$TLS_URL" --redis-tls-ca "$WORK/tls/ca.crt"
run_runner "java redis mutual TLS (futures)" --store redis --redis-url "$MTLS_URL" --redis-tls-ca "$WORK/mtls/ca.crt" \
    --redis-tls-cert "$WORK/mtls/client.crt" --redis-tls-key "$WORK/mtls/client.key" --api async
# A malformed file is exit status 2 with a message.
echo '{"suites": [{"id": "x", "ops": [], "bogus": 1}]}' >"$WORK/bad.json"
set +e
"$HERE/tk-conformance" "$WORK/bad.json" 2>"$WORK/err"
status=$?
set -e
[ "$status" -eq 2 ] && grep -q "unknown field" "$WORK/err" || { echo "a malformed file gave status $status: $(cat "$WORK/err")" >&2; exit 1; }

step "the README's Java quick start is this file, and it runs (the jar alone on the classpath)"
# (The root README's Java snippet is an excerpt of the same file: scripts/check-readme.py, in lint.)
python3 - "$HERE/README.md" "$HERE/example/QuickStart.java" <<'PY'
import sys
readme, example = (open(p).read() for p in sys.argv[1:])
if example.strip() not in readme:
    sys.exit("bindings-jvm/README.md does not show example/QuickStart.java verbatim")
PY
out=$(java -Dthrottlekit.tmpdir="$WORK/native" -cp "$B/throttlekit.jar:$B/tools" QuickStart "$URL")
echo "$out" | sed 's/^/  /'
grep -qx "memory: allowed=true remaining=9" <<<"$out" && grep -q "^redis: allowed=true remaining=" <<<"$out" \
    && grep -qx "error code: config_invalid" <<<"$out" || { echo "the quick start printed something else" >&2; exit 1; }

echo
echo "bindings-jvm: all passed"
