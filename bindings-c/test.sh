#!/usr/bin/env bash
# Everything CI runs for the C ABI and the Go package, from a fresh machine (run as root from
# anywhere; paths are relative to this file):
#   1. apt-installs what is missing (gcc assumed): libcjson-dev pkg-config golang-go valgrind redis-server
#   2. builds libthrottlekit (debug) and regenerates include/throttlekit.h, failing on a diff
#   3. `make install PREFIX=$tmp`, then builds everything below ONLY from the installed header,
#      .so and throttlekit.pc (pkg-config), as a downstream user would
#   4. C unit tests under valgrind (no leaks, no errors), on memory and on a disposable Redis
#   5. tk-conformance on every conformance-vectors/*.json, memory and Redis, and on the HTTP
#      vectors (conformance-vectors/http/*.json, no store)
#   6. go test (vectors on both stores, the HTTP vectors, Example, unit tests)
# Environment: CARGO_TARGET_DIR (default $ROOT/target), PROFILE (debug|release, default debug).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
PROFILE=${PROFILE:-debug}
step() { printf '\n== %s\n' "$*"; }

step "system packages"
need=()
[ -f /usr/include/cjson/cJSON.h ] || need+=(libcjson-dev)
command -v pkg-config >/dev/null || need+=(pkg-config)
command -v go >/dev/null || need+=(golang-go)
command -v valgrind >/dev/null || need+=(valgrind)
command -v redis-server >/dev/null || need+=(redis-server)
if [ ${#need[@]} -gt 0 ]; then
    echo "installing: ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

step "build libthrottlekit ($PROFILE) and regenerate the header"
make -s -C "$HERE" header PROFILE="$PROFILE"
if ! git -C "$ROOT" diff --exit-code -- bindings-c/include/throttlekit.h; then
    echo "include/throttlekit.h is out of date: commit the regenerated header" >&2
    exit 1
fi

WORK=$(mktemp -d)
REDIS_PID=
cleanup() {
    # Wait for the server to exit: it writes its log into $WORK while shutting down, and an
    # rm racing that write fails with "Directory not empty".
    if [ -n "$REDIS_PID" ]; then
        kill "$REDIS_PID" 2>/dev/null || true
        wait "$REDIS_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK" || true
}
trap cleanup EXIT

step "make install PREFIX=$WORK/prefix"
make -s -C "$HERE" install PROFILE="$PROFILE" PREFIX="$WORK/prefix"
export PKG_CONFIG_PATH="$WORK/prefix/lib/pkgconfig"
LIBDIR=$(pkg-config --variable=libdir throttlekit)
echo "pkg-config: throttlekit $(pkg-config --modversion throttlekit), $(pkg-config --cflags --libs throttlekit)"

step "build the C tests from the installed artifacts"
CFLAGS="-std=c11 -O1 -g -Wall -Wextra -Werror"
# shellcheck disable=SC2046
gcc $CFLAGS $(pkg-config --cflags throttlekit) "$HERE/tests/test_throttlekit.c" \
    $(pkg-config --libs throttlekit) -lpthread -Wl,-rpath,"$LIBDIR" -o "$WORK/test_throttlekit"
# shellcheck disable=SC2046
gcc $CFLAGS $(pkg-config --cflags throttlekit) "$HERE/tests/tk_conformance.c" \
    $(pkg-config --libs throttlekit) $(pkg-config --libs libcjson) -Wl,-rpath,"$LIBDIR" -o "$WORK/tk-conformance"
# The static library links too (Libs.private carries Rust's native dependencies).
# shellcheck disable=SC2046
gcc $CFLAGS $(pkg-config --cflags throttlekit) "$HERE/tests/test_throttlekit.c" \
    "$LIBDIR/libthrottlekit.a" $(pkg-config --libs-only-l --static throttlekit | sed 's/-lthrottlekit//') \
    -o "$WORK/test_throttlekit_static"
readelf -d "$WORK/test_throttlekit" | grep -q 'NEEDED.*libthrottlekit.so.0' \
    || { echo "the test binary does not link the versioned soname" >&2; exit 1; }

step "start a disposable redis-server"
# tests/redis-server.sh picks a fresh port on every attempt and checks that our PID answers.
REDIS_URL=$("$ROOT/tests/redis-server.sh" start "$WORK/redis.pid")
REDIS_PID=$(cat "$WORK/redis.pid")
PORT=${REDIS_URL##*:}
URL_C="redis://127.0.0.1:$PORT/0"
URL_GO="redis://127.0.0.1:$PORT/1"

step "C unit tests under valgrind"
VALGRIND=(valgrind -q --error-exitcode=99 --leak-check=full --show-possibly-lost=no
          --errors-for-leak-kinds=definite,indirect)
TK_REDIS_URL="$URL_C" "${VALGRIND[@]}" "$WORK/test_throttlekit"
"$WORK/test_throttlekit_static" | tail -1

step "C conformance runner: memory (under valgrind) and Redis"
VECTORS=("$ROOT"/conformance-vectors/*.json)
C_MEM=$("${VALGRIND[@]}" "$WORK/tk-conformance" --store memory "${VECTORS[@]}" | tail -20)
echo "$C_MEM"
C_REDIS=$("$WORK/tk-conformance" --store redis --redis-url "$URL_C" "${VECTORS[@]}" | tail -20)
echo "$C_REDIS"

step "the Rust CLI on the same files: C must report the same totals"
# Every runner compares every expected field exactly, so equal totals with 0 failed mean the
# same decisions op for op.
RUST=$(cd "$ROOT" && cargo run -q -p throttlekit --bin throttlekit -- conformance "${VECTORS[@]}" | tail -1)
echo "rust: $RUST"
for got in "$(tail -1 <<<"$C_MEM")" "$(tail -1 <<<"$C_REDIS")"; do
    [ "$got" = "$RUST" ] || { echo "C runner reported '$got', the Rust CLI '$RUST'" >&2; exit 1; }
done

step "C conformance runner on the HTTP vectors (under valgrind), against the Rust CLI"
HTTP_VECTORS=("$ROOT"/conformance-vectors/http/*.json)
C_HTTP=$("${VALGRIND[@]}" "$WORK/tk-conformance" "${HTTP_VECTORS[@]}" | tail -20)
echo "$C_HTTP"
RUST_HTTP=$(cd "$ROOT" && cargo run -q -p throttlekit --bin throttlekit -- conformance "${HTTP_VECTORS[@]}" | tail -1)
[ "$(tail -1 <<<"$C_HTTP")" = "$RUST_HTTP" ] \
    || { echo "C runner reported '$(tail -1 <<<"$C_HTTP")' on the HTTP vectors, the Rust CLI '$RUST_HTTP'" >&2; exit 1; }

step "go test (vectors on memory and Redis, Example, unit tests)"
GO_OUT=$(cd "$HERE/go" && CGO_LDFLAGS="-Wl,-rpath,$LIBDIR" TK_REDIS_URL="$URL_GO" go test -count=1 -v ./... 2>&1) \
    || { echo "$GO_OUT"; exit 1; }
grep -E '^(---|ok|go conformance|go http conformance)' <<<"$GO_OUT"
got=$(sed -n "s/^go http conformance: //p" <<<"$GO_OUT")
[ "$got" = "$RUST_HTTP" ] || { echo "Go HTTP runner reported '$got', the Rust CLI '$RUST_HTTP'" >&2; exit 1; }
for store in memory redis; do
    got=$(sed -n "s/^go conformance ($store): //p" <<<"$GO_OUT")
    [ "$got" = "$RUST" ] || { echo "Go runner ($store) reported '$got', the Rust CLI '$RUST'" >&2; exit 1; }
done
(cd "$HERE/go" && go vet ./... && test -z "$(gofmt -l .)")
echo
echo "bindings-c: all passed"
