#!/usr/bin/env bash
# Everything CI runs for the C ABI and the Go package, from a fresh machine (run as root from
# anywhere; paths are relative to this file):
#   1. apt-installs what is missing (gcc assumed): libcjson-dev pkg-config golang-go valgrind redis-server
#   2. builds libthrottlekit (debug) and regenerates include/throttlekit.h, failing on a diff
#   3. `make install PREFIX=$tmp`, then builds everything below ONLY from the installed header,
#      .so and throttlekit.pc (pkg-config), as a downstream user would
#   4. C unit tests (and the two-tier modes' tests/test_lease.c, the server clock's
#      tests/test_redis_clock.c) under valgrind (no leaks, no errors), on memory and on a
#      disposable Redis (tests/test_postgres.c, the Postgres store's
#      options, on the Postgres of step 5),
#      a 3-master cluster and a TLS server (one of each for the whole script, and a Sentinel setup)
#   5. tk-conformance on every conformance-vectors/*.json: memory, Redis, cluster, Sentinel, TLS,
#      Postgres, SQLite;
#      and on the HTTP and adaptive vectors (conformance-vectors/{http,adaptive}/*.json, no store)
#   6. go test (vectors on every store, the HTTP vectors, Example, unit tests), tkgin (the gin
#      middleware, against Debian's gin: apt-installs golang-github-gin-gonic-gin-dev), the Go
#      shutdown-hygiene check; and a C key flood against a default memory store
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
command -v redis-cli >/dev/null || need+=(redis-tools)
command -v openssl >/dev/null || need+=(openssl)
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
CLUSTER_PIDS=$WORK/cluster.pids
SENTINEL_DIR=$WORK/sentinel
SENTINEL_PW_DIR=$WORK/sentinel-pw
TLS_DIR=$WORK/tls
MTLS_DIR=$WORK/mtls
cleanup() {
    "$ROOT/tests/redis-tls.sh" stop "$MTLS_DIR" || true
    "$ROOT/tests/redis-cluster.sh" stop "$CLUSTER_PIDS" || true
    "$ROOT/tests/redis-sentinels.sh" stop "$SENTINEL_DIR" || true
    "$ROOT/tests/redis-sentinels.sh" stop "$SENTINEL_PW_DIR" || true
    "$ROOT/tests/redis-tls.sh" stop "$TLS_DIR" || true
    "$ROOT/tests/postgres-server.sh" stop "$WORK/postgres.pid" || true
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
gcc $CFLAGS $(pkg-config --cflags throttlekit) "$HERE/tests/test_lease.c" \
    $(pkg-config --libs throttlekit) -Wl,-rpath,"$LIBDIR" -o "$WORK/test_lease"
# shellcheck disable=SC2046
gcc $CFLAGS $(pkg-config --cflags throttlekit) "$HERE/tests/tk_conformance.c" "$HERE/tests/tk_conformance_adaptive.c" \
    $(pkg-config --libs throttlekit) $(pkg-config --libs libcjson) -Wl,-rpath,"$LIBDIR" -o "$WORK/tk-conformance"
# The static library links too (Libs.private carries Rust's native dependencies).
# shellcheck disable=SC2046
gcc $CFLAGS $(pkg-config --cflags throttlekit) "$HERE/tests/test_throttlekit.c" \
    "$LIBDIR/libthrottlekit.a" $(pkg-config --libs-only-l --static throttlekit | sed 's/-lthrottlekit//') \
    -o "$WORK/test_throttlekit_static"
# shellcheck disable=SC2046
gcc $CFLAGS $(pkg-config --cflags throttlekit) "$HERE/tests/test_redis_clock.c" \
    $(pkg-config --libs throttlekit) -Wl,-rpath,"$LIBDIR" -o "$WORK/test_redis_clock"
# shellcheck disable=SC2046
gcc $CFLAGS $(pkg-config --cflags throttlekit) "$HERE/tests/test_postgres.c" \
    $(pkg-config --libs throttlekit) -Wl,-rpath,"$LIBDIR" -o "$WORK/test_postgres"
# shellcheck disable=SC2046
gcc $CFLAGS $(pkg-config --cflags throttlekit) "$HERE/tests/test_adaptive.c" \
    $(pkg-config --libs throttlekit) -lpthread -Wl,-rpath,"$LIBDIR" -o "$WORK/test_adaptive"
# shellcheck disable=SC2046
gcc $CFLAGS $(pkg-config --cflags throttlekit) "$HERE/tests/key_flood.c" \
    $(pkg-config --libs throttlekit) -Wl,-rpath,"$LIBDIR" -o "$WORK/key_flood"
readelf -d "$WORK/test_throttlekit" | grep -q 'NEEDED.*libthrottlekit.so.0' \
    || { echo "the test binary does not link the versioned soname" >&2; exit 1; }

step "start a disposable redis-server"
# tests/redis-server.sh picks a fresh port on every attempt and checks that our PID answers.
REDIS_URL=$("$ROOT/tests/redis-server.sh" start "$WORK/redis.pid")
REDIS_PID=$(cat "$WORK/redis.pid")
PORT=${REDIS_URL##*:}
URL_C="redis://127.0.0.1:$PORT/0"
URL_GO="redis://127.0.0.1:$PORT/1"

step "start a disposable 3-master cluster, a Sentinel setup and a TLS redis-server (throwaway CA)"
CLUSTER_URLS=$("$ROOT/tests/redis-cluster.sh" start "$CLUSTER_PIDS")
SENTINEL_URLS=$("$ROOT/tests/redis-sentinels.sh" start "$SENTINEL_DIR")
# Sentinels that require a password (sentinel_password), whose master has a replica (durable charges).
SENTINEL_PW_URLS=$(SENTINEL_PASSWORD=spw "$ROOT/tests/redis-sentinels.sh" start "$SENTINEL_PW_DIR")
export TK_REDIS_SENTINEL_PW_URLS=$SENTINEL_PW_URLS
TLS_URL=$("$ROOT/tests/redis-tls.sh" start "$TLS_DIR" 2>/dev/null)
echo "cluster seeds $CLUSTER_URLS; sentinels $SENTINEL_URLS; TLS $TLS_URL"
# And one that requires client certificates (mutual TLS), for the Go test of those options.
MTLS_URL=$(MUTUAL=1 "$ROOT/tests/redis-tls.sh" start "$MTLS_DIR" 2>/dev/null)
export TK_REDIS_CLUSTER_URLS=$CLUSTER_URLS TK_REDIS_TLS_URL=$TLS_URL TK_REDIS_TLS_DIR=$TLS_DIR
export TK_REDIS_MTLS_URL=$MTLS_URL TK_REDIS_MTLS_DIR=$MTLS_DIR

step "C unit tests under valgrind"
VALGRIND=(valgrind -q --error-exitcode=99 --leak-check=full --show-possibly-lost=no
          --errors-for-leak-kinds=definite,indirect)
# Without the TLS test: ring's hand-written AES-GCM assembly writes bytes valgrind cannot see
# initialised, so every TLS record is reported as uninitialised (a known false positive). The
# TLS test runs in the static binary just below, without valgrind.
env -u TK_REDIS_TLS_URL TK_REDIS_URL="$URL_C" "${VALGRIND[@]}" "$WORK/test_throttlekit"
TK_REDIS_URL="$URL_C" "$WORK/test_throttlekit_static" | tail -1
# The two-tier modes (docs/leasing.md): bad options, a fleet of 3 on one key, cached denials,
# the multi limiter's modes.
TK_REDIS_URL="$URL_C" "${VALGRIND[@]}" "$WORK/test_lease"
# tk_redis_options.server_clock: limiters, multi limiters and shapers on Redis's clock.
TK_REDIS_URL="$URL_C" "${VALGRIND[@]}" "$WORK/test_redis_clock"
# Adaptive concurrency (docs/adaptive.md): options, rejections, releases, waiting, partitions.
"${VALGRIND[@]}" "$WORK/test_adaptive"

# readme_program LINE_RE NAME SYMBOL: the first C block of README.md after the line matching
# LINE_RE, compiled from the installed library to $WORK/NAME; SYMBOL proves it is the right one.
readme_program() {
    awk -v start="$1" '$0 ~ start {grab=1; next} grab && /^```c$/{on=1; next} on && /^```$/{exit} on' \
        "$HERE/README.md" >"$WORK/$2.c"
    grep -q "$3" "$WORK/$2.c" || { echo "README.md lost its $2 program (no $3)" >&2; exit 1; }
    # shellcheck disable=SC2046
    gcc $CFLAGS $(pkg-config --cflags throttlekit) "$WORK/$2.c" $(pkg-config --libs throttlekit) \
        -Wl,-rpath,"$LIBDIR" -o "$WORK/$2"
}

step "the README's C quick start (the root README shows an excerpt of it) compiles and runs"
readme_program '^## C quick start' quick tk_limiter_check
"${VALGRIND[@]}" "$WORK/quick" || { echo "the C quick start exited with $?" >&2; exit 1; }

step "the README's connecting example, against the cluster and the TLS server"
readme_program '^<!-- test.sh compiles and runs this program' connect tk_store_redis_connect_with
GOT=$("$WORK/connect" "$CLUSTER_URLS" "$TLS_URL" "$TLS_DIR/ca.crt")
[ "$GOT" = $'cluster allowed\ntls allowed' ] || { echo "the connecting example printed: $GOT" >&2; exit 1; }

step "C key flood: 3M (TK_FLOOD_TOTAL) distinct keys against a default store stay flat at its bound"
# (scripts/key-flood.sh floods 10M.) The store's share of resident memory is documented as
# 105-125 MB at the bound; allow 130 MB above the baseline, and 2 % growth past 2x the bound.
FLOOD=${TK_FLOOD_TOTAL:-3000000}
read -r base settled end evictions < <("$WORK/key_flood" "$FLOOD")
echo "c flood of $FLOOD keys: baseline ${base} KiB, settled ${settled} KiB, end ${end} KiB, ${evictions} evictions"
[ $((end - base)) -le $((130 * 1024)) ] || { echo "resident memory above the documented bound" >&2; exit 1; }
[ $((end * 50)) -le $((settled * 51)) ] || { echo "resident memory kept growing past the bound" >&2; exit 1; }
[ "$evictions" -ge $((FLOOD - 917504)) ] || { echo "too few evictions" >&2; exit 1; }

step "C conformance runner: memory (under valgrind), Redis, cluster, Sentinel, TLS, Postgres and SQLite"
VECTORS=("$ROOT"/conformance-vectors/*.json)
C_MEM=$("${VALGRIND[@]}" "$WORK/tk-conformance" --store memory "${VECTORS[@]}" | tail -20)
echo "$C_MEM"
C_REDIS=$("$WORK/tk-conformance" --store redis --redis-url "$URL_C" "${VECTORS[@]}" | tail -20)
echo "$C_REDIS"
C_CLUSTER=$("$WORK/tk-conformance" --store redis-cluster --redis-url "$CLUSTER_URLS" "${VECTORS[@]}" | tail -20)
echo "cluster: $C_CLUSTER"
C_SENTINEL=$("$WORK/tk-conformance" --store redis-sentinel --redis-url "$SENTINEL_URLS" --redis-service-name tkmain "${VECTORS[@]}" | tail -20)
echo "sentinel: $C_SENTINEL"
C_TLS=$("$WORK/tk-conformance" --store redis --redis-url "$TLS_URL" --redis-tls-ca "$TLS_DIR/ca.crt" "${VECTORS[@]}" | tail -20)
echo "tls: $C_TLS"
PG_URL=$("$ROOT/tests/postgres-server.sh" start "$WORK/postgres.pid")
# The Postgres store's options (tk_postgres_options, the migrate step), under valgrind.
TK_POSTGRES_URL="$PG_URL" "${VALGRIND[@]}" "$WORK/test_postgres"
C_PG=$("$WORK/tk-conformance" --store postgres --postgres-url "$PG_URL" "${VECTORS[@]}" | tail -20)
echo "postgres: $C_PG"
C_SQLITE=$("$WORK/tk-conformance" --store sqlite --sqlite-path "$WORK/c-conformance.db" "${VECTORS[@]}" | tail -20)
echo "sqlite: $C_SQLITE"
# tk-conformance refused: `refused CODE WHAT ARGS...` fails the script unless tk-conformance ARGS
# exits 2 naming the library's error CODE.
refused() {
    local code=$1 what=$2 out status
    shift 2
    set +e
    out=$("$WORK/tk-conformance" "$@" "${VECTORS[0]}" 2>&1)
    status=$?
    set -e
    [ "$status" = 2 ] && grep -q "$code" <<<"$out" \
        || { echo "tk-conformance $what should exit 2 with $code: $status $out" >&2; exit 1; }
}
refused config_invalid "on a directory as --sqlite-path" --store sqlite --sqlite-path "$WORK"
refused store_unavailable "on Postgres with a wrong password" \
    --store postgres --postgres-url "${PG_URL/throttlekit:throttlekit@/throttlekit:wrong@}"
refused config_invalid "with --redis-tls-ca on redis://" --store redis --redis-url "$URL_C" --redis-tls-ca "$TLS_DIR/ca.crt"

step "the Rust CLI on the same files: C must report the same totals"
# Every runner compares every expected field exactly, so equal totals with 0 failed mean the
# same decisions op for op.
RUST=$(cd "$ROOT" && cargo run -q -p throttlekit-cli --bin throttlekit -- conformance "${VECTORS[@]}" | tail -1)
echo "rust: $RUST"
for got in "$(tail -1 <<<"$C_MEM")" "$(tail -1 <<<"$C_REDIS")" "$(tail -1 <<<"$C_CLUSTER")" "$(tail -1 <<<"$C_SENTINEL")" "$(tail -1 <<<"$C_TLS")" "$(tail -1 <<<"$C_PG")" \
           "$(tail -1 <<<"$C_SQLITE")"; do
    [ "$got" = "$RUST" ] || { echo "C runner reported '$got', the Rust CLI '$RUST'" >&2; exit 1; }
done

step "C conformance runner on the HTTP vectors (under valgrind), against the Rust CLI"
HTTP_VECTORS=("$ROOT"/conformance-vectors/http/*.json)
C_HTTP=$("${VALGRIND[@]}" "$WORK/tk-conformance" "${HTTP_VECTORS[@]}" | tail -20)
echo "$C_HTTP"
RUST_HTTP=$(cd "$ROOT" && cargo run -q -p throttlekit-cli --bin throttlekit -- conformance "${HTTP_VECTORS[@]}" | tail -1)
[ "$(tail -1 <<<"$C_HTTP")" = "$RUST_HTTP" ] \
    || { echo "C runner reported '$(tail -1 <<<"$C_HTTP")' on the HTTP vectors, the Rust CLI '$RUST_HTTP'" >&2; exit 1; }

step "C conformance runner on the adaptive vectors (under valgrind), against the Rust CLI"
ADAPTIVE_VECTORS=("$ROOT"/conformance-vectors/adaptive/*.json)
C_ADAPTIVE=$("${VALGRIND[@]}" "$WORK/tk-conformance" "${ADAPTIVE_VECTORS[@]}" | tail -20)
echo "$C_ADAPTIVE"
RUST_ADAPTIVE=$(cd "$ROOT" && cargo run -q -p throttlekit-cli --bin throttlekit -- conformance "${ADAPTIVE_VECTORS[@]}" | tail -1)
[ "$(tail -1 <<<"$C_ADAPTIVE")" = "$RUST_ADAPTIVE" ] \
    || { echo "C runner reported '$(tail -1 <<<"$C_ADAPTIVE")' on the adaptive vectors, the Rust CLI '$RUST_ADAPTIVE'" >&2; exit 1; }

step "go test (vectors on memory, Redis, cluster, TLS, Postgres and SQLite, the HTTP vectors, Example, unit tests)"
GO_OUT=$(cd "$HERE/go" && CGO_LDFLAGS="-Wl,-rpath,$LIBDIR" TK_REDIS_URL="$URL_GO" TK_POSTGRES_URL="$PG_URL" go test -count=1 -v ./... 2>&1) \
    || { echo "$GO_OUT"; exit 1; }
grep -E '^(---|ok|go conformance|go http conformance|go adaptive conformance|go flood)' <<<"$GO_OUT"
got=$(sed -n "s/^go http conformance: //p" <<<"$GO_OUT")
[ "$got" = "$RUST_HTTP" ] || { echo "Go HTTP runner reported '$got', the Rust CLI '$RUST_HTTP'" >&2; exit 1; }
got=$(sed -n "s/^go adaptive conformance: //p" <<<"$GO_OUT")
[ "$got" = "$RUST_ADAPTIVE" ] || { echo "Go adaptive runner reported '$got', the Rust CLI '$RUST_ADAPTIVE'" >&2; exit 1; }
for store in memory redis redis-cluster redis-tls postgres sqlite; do
    got=$(sed -n "s/^go conformance ($store): //p" <<<"$GO_OUT")
    [ "$got" = "$RUST" ] || { echo "Go runner ($store) reported '$got', the Rust CLI '$RUST'" >&2; exit 1; }
done
# The Go runner takes the Rust CLI's flags: its test binary built once, then run per store
# (what `go test -run ... -args` does, without a compile and link each time).
(cd "$HERE/go" && CGO_LDFLAGS="-Wl,-rpath,$LIBDIR" go test -c -o "$WORK/go-runner.test" .)
for args in "--store redis-cluster --redis-url $CLUSTER_URLS" \
            "--store redis-sentinel --redis-url $SENTINEL_URLS --redis-service-name tkmain" \
            "--store redis --redis-url $TLS_URL --redis-tls-ca $TLS_DIR/ca.crt" \
            "--store postgres --postgres-url $PG_URL" \
            "--store sqlite --sqlite-path $WORK/go-runner.db"; do
    # shellcheck disable=SC2086
    OUT=$(cd "$HERE/go" && "$WORK/go-runner.test" -test.run '^TestConformanceRunner$' -test.v $args 2>&1) \
        || { echo "$OUT"; exit 1; }
    got=$(sed -n 's/^go conformance (runner [a-z-]*): //p' <<<"$OUT")
    echo "go runner $args: $got"
    [ "$got" = "$RUST" ] || { echo "Go runner ($args) reported '$got', the Rust CLI '$RUST'" >&2; exit 1; }
done
step "Go shutdown hygiene: a child closes its Redis store and exits with nothing left"
(cd "$HERE/go" && CGO_LDFLAGS="-Wl,-rpath,$LIBDIR" go build -o "$WORK/shutdownchild" ./internal/shutdownchild)
python3 "$ROOT/tests/shutdown_check.py" "$URL_GO" -- "$WORK/shutdownchild"
step "tkgin: the gin middleware, against Debian's gin (GOPATH mode: tkgin/go.sh)"
GIN_OUT=$(CGO_LDFLAGS="-Wl,-rpath,$LIBDIR" "$HERE/go/tkgin/go.sh" test -count=1 -v . 2>&1) \
    || { echo "$GIN_OUT"; exit 1; }
grep -E '^(---|ok)' <<<"$GIN_OUT"
"$HERE/go/tkgin/go.sh" vet .
# The README's gin quick start, copied into an empty project's main(), serves 5 then a 429.
mkdir -p "$WORK/ginapp"
python3 - "$HERE/README.md" "$WORK/ginapp/main.go" <<'PY'
import re, sys
readme = open(sys.argv[1]).read()
section = readme[readme.index("## Go gin middleware"):]
code = re.search(r"```go\n(.*?)```", section, re.S).group(1)
body = "\n".join("\t" + l if l else l for l in code.splitlines())
open(sys.argv[2], "w").write(f"""package main

import (
\t"fmt"
\t"net/http/httptest"

\tthrottlekit "example.invalid/throttlekit/go"
\t"example.invalid/throttlekit/go/tkgin"
\t"example.invalid/throttlekit/go/tkhttp"
\t"github.com/gin-gonic/gin"
)

func main() {{
{body}
\tsrv := httptest.NewServer(router)
\tdefer srv.Close()
\tfor i := 0; i < 6; i++ {{
\t\tresp, err := srv.Client().Get(srv.URL + "/api/hello")
\t\tif err != nil {{
\t\t\tpanic(err)
\t\t}}
\t\tresp.Body.Close()
\t\tfmt.Print(resp.StatusCode, " ")
\t}}
}}
""")
PY
GIN_QS=$(TKGIN_DIR="$WORK/ginapp" CGO_LDFLAGS="-Wl,-rpath,$LIBDIR" GIN_MODE=release "$HERE/go/tkgin/go.sh" run . 2>&1) \
    || { echo "$GIN_QS"; exit 1; }
echo "gin quick start: $GIN_QS"
[ "$GIN_QS" = "200 200 200 200 200 429 " ] || { echo "the gin quick start printed '$GIN_QS'" >&2; exit 1; }
(cd "$HERE/go" && go vet ./... && test -z "$(gofmt -l .)")
echo
echo "bindings-c: all passed"
