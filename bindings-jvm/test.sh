#!/usr/bin/env bash
# Everything CI runs for the JVM library, from a fresh machine:
#   1. installs what is missing (install-tools.sh: JDK 17, junit5, Guava, Jetty; all Debian)
#   2. builds the cdylib, the classes and build/throttlekit.jar (build.sh), the tests and tools
#   3. starts a disposable redis-server (tests/redis-server.sh), stopped by PID on exit
#   4. the JUnit 5 tests through Debian's console launcher, totals printed as `N passed, M failed`
#   5. the conformance runner replays every conformance-vectors/*.json on memory and Redis,
#      blocking and through the futures, and must report the Rust CLI's totals
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
    rm -rf "$WORK" || true
}
trap cleanup EXIT
step "start a disposable redis-server"
URL=$("$ROOT/tests/redis-server.sh" start "$WORK/redis.pid")
echo "$URL (pid $(cat "$WORK/redis.pid"))"

step "JUnit 5 (console launcher)"
B=$HERE/build
CP=$B/throttlekit.jar:$B/test
set +e
java -Dthrottlekit.tmpdir="$WORK/native" -Dthrottlekit.test.redis="$URL" -Dthrottlekit.test.classpath="$CP" \
    -jar /usr/share/java/junit-platform-console-standalone.jar -cp "$CP" --scan-classpath \
    --disable-banner --details=summary --disable-ansi-colors >"$WORK/junit.log" 2>&1
status=$?
set -e
passed=$(sed -n 's/^\[ *\([0-9]*\) tests successful *\]$/\1/p' "$WORK/junit.log")
failed=$(sed -n 's/^\[ *\([0-9]*\) tests failed *\]$/\1/p' "$WORK/junit.log")
[ "$status" -eq 0 ] && [ "${failed:-1}" = 0 ] || cat "$WORK/junit.log"
echo "${passed:-0} passed, ${failed:-?} failed"
[ "$status" -eq 0 ] && [ "${failed:-1}" = 0 ] && [ "${passed:-0}" -gt 0 ]

step "the Rust CLI's totals on the same files"
VECTORS=("$ROOT"/conformance-vectors/*.json)
RUST=$(cd "$ROOT" && cargo run -q --locked -p throttlekit --bin throttlekit -- conformance "${VECTORS[@]}" | tail -1)
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
# A malformed file is exit status 2 with a message.
echo '{"suites": [{"id": "x", "ops": [], "bogus": 1}]}' >"$WORK/bad.json"
set +e
"$HERE/tk-conformance" "$WORK/bad.json" 2>"$WORK/err"
status=$?
set -e
[ "$status" -eq 2 ] && grep -q "unknown field" "$WORK/err" || { echo "a malformed file gave status $status: $(cat "$WORK/err")" >&2; exit 1; }

echo
echo "bindings-jvm: all passed"
