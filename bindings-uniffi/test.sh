#!/usr/bin/env bash
# Everything CI runs for the uniffi binding (Ruby; the JVM has its own library, bindings-jvm/),
# from a fresh machine:
#   1. installs what is missing (install-tools.sh: ruby, ruby-ffi)
#   2. builds the library and the generator, regenerates the Ruby sources and fails on a diff
#      (the committed sources must match the library); the crate's unit tests
#   3. builds the gem's library (make ruby)
#   4. a disposable redis-server (tests/redis-server.sh), a 3-master cluster, two Sentinel setups
#      and a TLS server (tests/redis-*.sh), and Postgres 15 (tests/postgres-server.sh), started
#      in the background before step 2 and stopped by PID on exit
#   5. the runner replays every conformance-vectors/*.json on memory and on Redis (also through
#      the async API), then on the cluster, Sentinel, TLS, Postgres and SQLite (a temp file) with
#      the CLI's store flags, and must report the Rust CLI's totals
#   6. the Ruby tests, with Redis; the SQL stores' (ruby/test/test_sql.rb, with Postgres); Throttlekit::Rack's (ruby/test/test_rack.rb); the adaptive
#      limiter's and Throttlekit::RackShedder's (ruby/test/test_adaptive.rb), and the runner on
#      conformance-vectors/adaptive
#   7. the quick start in README.md is the file run here, against the gem built and installed
#      from ruby/throttlekit.gemspec; the Rack quick start is copied into an empty folder and
#      served by puma from that gem
# Environment: PROFILE (debug|release, default debug), CARGO_TARGET_DIR.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export PROFILE=${PROFILE:-debug}
LIBDIR=${CARGO_TARGET_DIR:-$ROOT/target}/$PROFILE
step() { printf '\n== %s\n' "$*"; }

step "tools"
"$HERE/install-tools.sh"

WORK=$(mktemp -d)
cleanup() {
    wait || true # the servers still starting, so that each is stopped below
    "$ROOT/tests/redis-server.sh" stop "$WORK/redis.pid" || true
    "$ROOT/tests/redis-cluster.sh" stop "$WORK/cluster.pids" || true
    "$ROOT/tests/redis-sentinels.sh" stop "$WORK/sentinel" || true
    "$ROOT/tests/redis-sentinels.sh" stop "$WORK/sentinel-pw" || true
    "$ROOT/tests/redis-tls.sh" stop "$WORK/tls" || true
    "$ROOT/tests/postgres-server.sh" stop "$WORK/postgres.pid" || true
    rm -rf "$WORK" || true
}
trap cleanup EXIT
# Every Redis server starts now, in the background, while the library and the generator compile:
# forming the cluster and the two Sentinel setups is mostly waiting (about 20 s one after the
# other), and nothing uses a server before the conformance runs. `started NAME VAR` waits for one
# and sets VAR to its URL (not in a $(...) subshell: only this shell can wait for its children).
# The start scripts pick free ports and retry, so starting them at once is safe.
declare -A STARTING
start_in_background() { # NAME COMMAND...
    local name=$1
    shift
    "$@" >"$WORK/$name.url" 2>"$WORK/$name.err" &
    STARTING[$name]=$!
}
started() { # NAME VAR
    wait "${STARTING[$1]}" || { cat "$WORK/$1.err" >&2; echo "could not start $1" >&2; exit 1; }
    printf -v "$2" '%s' "$(cat "$WORK/$1.url")"
}
start_in_background redis "$ROOT/tests/redis-server.sh" start "$WORK/redis.pid"
start_in_background cluster "$ROOT/tests/redis-cluster.sh" start "$WORK/cluster.pids"
start_in_background sentinel "$ROOT/tests/redis-sentinels.sh" start "$WORK/sentinel"
start_in_background sentinel-pw env SENTINEL_PASSWORD=spw "$ROOT/tests/redis-sentinels.sh" start "$WORK/sentinel-pw"
start_in_background tls "$ROOT/tests/redis-tls.sh" start "$WORK/tls"
start_in_background postgres "$ROOT/tests/postgres-server.sh" start "$WORK/postgres.pid"

step "build the library and regenerate the Ruby sources"
make -s -C "$HERE" generate PROFILE="$PROFILE"
if ! git -C "$ROOT" diff --exit-code -- bindings-uniffi/ruby/lib; then
    echo "the generated sources are out of date: commit the regenerated files" >&2
    exit 1
fi

step "the crate's unit tests (argument conversions, error codes)"
UNIT=$(cd "$ROOT" && cargo test -q --locked -p throttlekit-uniffi --features bindgen 2>&1) \
    || { echo "$UNIT"; echo "cargo test -p throttlekit-uniffi failed" >&2; exit 1; }
grep "test result" <<<"$UNIT"

step "build the gem's library"
make -s -C "$HERE" ruby PROFILE="$PROFILE"

step "a disposable redis-server (started in the background above)"
started redis URL
echo "$URL (pid $(cat "$WORK/redis.pid"))"

step "the Rust CLI's totals on the same files"
VECTORS=("$ROOT"/conformance-vectors/*.json)
RUST=$(cd "$ROOT" && cargo run -q --locked -p throttlekit-cli --bin throttlekit -- conformance "${VECTORS[@]}" | tail -1)
echo "rust: $RUST"

step "conformance runner: Ruby, memory and Redis"
# Every runner compares every expected field exactly, so equal totals with 0 failed mean the
# same decisions op for op.
run_runner() {
    local name=$1
    shift
    local out
    out=$("$@" "${VECTORS[@]}" | tail -20) || { echo "$out"; echo "$name failed" >&2; exit 1; }
    local last
    last=$(tail -1 <<<"$out")
    echo "$name: $last"
    [ "$last" = "$RUST" ] || { echo "$name reported '$last', the Rust CLI '$RUST'" >&2; exit 1; }
}
run_runner "ruby memory" "$HERE/ruby/tk-conformance" --store memory
run_runner "ruby memory (async)" "$HERE/ruby/tk-conformance" --store memory --api async
run_runner "ruby redis" "$HERE/ruby/tk-conformance" --store redis --redis-url "$URL"
run_runner "ruby redis (async)" "$HERE/ruby/tk-conformance" --store redis --redis-url "$URL" --api async
step "conformance runner: the adaptive concurrency vectors (no store)"
ADAPTIVE=("$ROOT"/conformance-vectors/adaptive/*.json)
RUST_ADAPTIVE=$(cd "$ROOT" && cargo run -q --locked -p throttlekit-cli --bin throttlekit -- conformance "${ADAPTIVE[@]}" | tail -1)
out=$("$HERE/ruby/tk-conformance" "${ADAPTIVE[@]}" | tail -20) || { echo "$out"; exit 1; }
echo "ruby adaptive: $(tail -1 <<<"$out")"
[ "$(tail -1 <<<"$out")" = "$RUST_ADAPTIVE" ] || { echo "ruby adaptive reported '$(tail -1 <<<"$out")', the Rust CLI '$RUST_ADAPTIVE'" >&2; exit 1; }
step "conformance runner: a 3-master cluster, Sentinel and TLS (the CLI's store flags)"
started cluster CLUSTER_URLS
started sentinel SENTINEL_URLS
started tls TLS_URL
run_runner "ruby redis-cluster" "$HERE/ruby/tk-conformance" --store redis-cluster --redis-url "$CLUSTER_URLS"
run_runner "ruby redis-sentinel" "$HERE/ruby/tk-conformance" --store redis-sentinel --redis-url "$SENTINEL_URLS" --redis-service-name tkmain
run_runner "ruby redis TLS" "$HERE/ruby/tk-conformance" --store redis --redis-url "$TLS_URL" --redis-tls-ca "$WORK/tls/ca.crt"
step "conformance runner: Postgres and SQLite"
started postgres PG_URL
run_runner "ruby postgres" "$HERE/ruby/tk-conformance" --store postgres --postgres-url "$PG_URL"
run_runner "ruby sqlite" "$HERE/ruby/tk-conformance" --store sqlite --sqlite-path "$WORK/vectors.db"
# A malformed file is exit status 2 with a message.
echo '{"suites": [{"id": "x", "ops": [], "bogus": 1}]}' >"$WORK/bad.json"
for runner in "$HERE/ruby/tk-conformance"; do
    set +e
    "$runner" "$WORK/bad.json" 2>"$WORK/err"
    status=$?
    set -e
    [ "$status" -eq 2 ] && grep -q "unknown field" "$WORK/err" \
        || { echo "$runner: a malformed file gave status $status: $(cat "$WORK/err")" >&2; exit 1; }
done

step "Ruby tests (with Redis, a cluster, sentinels, and sentinels that require a password)"
started sentinel-pw TK_REDIS_SENTINEL_PW_URLS
export TK_REDIS_SENTINEL_PW_URLS TK_REDIS_CLUSTER_URLS=$CLUSTER_URLS TK_REDIS_SENTINEL_URLS=$SENTINEL_URLS
ruby "$HERE/ruby/test/test_throttlekit.rb" "$URL"

step "SQL store tests (Throttlekit::PostgresStore on the Postgres above, Throttlekit::SqliteStore on temp files)"
ruby "$HERE/ruby/test/test_sql.rb" "$PG_URL"

step "Rack middleware tests (Throttlekit::Rack; the fail policy against a redis-server killed by PID)"
ruby "$HERE/ruby/test/test_rack.rb" --with-redis

step "adaptive concurrency tests (Throttlekit::AdaptiveLimiter, its block form, Throttlekit::RackShedder)"
ruby "$HERE/ruby/test/test_adaptive.rb"

step "the README's quick start is this file, and it runs"
python3 - "$HERE/README.md" "$HERE/ruby/example/quickstart.rb" <<'PY'
import sys
readme = open(sys.argv[1]).read()
for path in sys.argv[2:]:
    if open(path).read().strip() not in readme:
        sys.exit(f"README.md does not show {path} verbatim")
PY
# (The root README's Ruby snippet is an excerpt of the same file: scripts/check-readme.py, in lint.)
expected_quickstart() {
    grep -qx "memory: allowed=true remaining=9" <<<"$1" && grep -q "^redis: allowed=true remaining=" <<<"$1" \
        && grep -qx "error code: config_invalid" <<<"$1"
}
# The Ruby quick start runs against the gem as a user installs it (gem build + gem install,
# offline: ffi is Debian's ruby-ffi), which loads the library it carries in lib/.
mkdir -p "$WORK/gem"
cp -r "$HERE/ruby/throttlekit.gemspec" "$HERE/ruby/lib" "$WORK/gem/"
(cd "$WORK/gem" && gem build -q throttlekit.gemspec >/dev/null \
    && gem install -q --local --ignore-dependencies --no-document -i "$WORK/gems" throttlekit-0.1.0.gem >/dev/null)
[ -f "$WORK/gems/gems/throttlekit-0.1.0/lib/libthrottlekit_uniffi.so" ] || { echo "the gem does not carry the library" >&2; exit 1; }
GEM_PATH_RUN="$WORK/gems:$(gem env gempath)"
for cmd in "env -u THROTTLEKIT_LIB GEM_PATH=$GEM_PATH_RUN ruby $HERE/ruby/example/quickstart.rb $URL"; do
    out=$($cmd)
    echo "$out" | sed "s/^/  /"
    expected_quickstart "$out" || { echo "quick start '$cmd' printed something else" >&2; exit 1; }
done

step "the README's Rack quick start, copied into an empty project, served by puma from the installed gem"
mkdir -p "$WORK/rackapp"
python3 - "$HERE/README.md" "$WORK/rackapp/config.ru" <<'PY'
import re, sys
readme = open(sys.argv[1]).read()
section = readme[readme.index("## Rack middleware"):]
code = re.search(r"```ruby\n(.*?)```", section, re.S).group(1)
open(sys.argv[2], "w").write(code)
PY
RACK_PORT=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
(cd "$WORK/rackapp" && exec env -u THROTTLEKIT_LIB -u RUBYLIB GEM_PATH="$GEM_PATH_RUN" puma --silent -b "tcp://127.0.0.1:$RACK_PORT" config.ru) &
RACK_PID=$!
statuses=$(python3 - "$RACK_PORT" <<'PY'
import sys, time, urllib.request, urllib.error
url = f"http://127.0.0.1:{sys.argv[1]}"
for _ in range(300):
    try:
        urllib.request.urlopen(url + "/healthz", timeout=1)
        break
    except OSError:
        time.sleep(0.1)
out = []
for _ in range(6):
    try:
        out.append(str(urllib.request.urlopen(url + "/limited", timeout=5).status))
    except urllib.error.HTTPError as e:
        out.append(str(e.code))
print(" ".join(out))
PY
)
kill "$RACK_PID"; wait "$RACK_PID" || true
echo "rack quick start: $statuses"
[ "$statuses" = "200 200 200 200 200 429" ] || { echo "the Rack quick start answered '$statuses'" >&2; exit 1; }

echo
echo "bindings-uniffi: all passed"
