#!/usr/bin/env bash
# Everything CI runs for the uniffi bindings (Kotlin/JVM and Ruby), from a fresh machine:
#   1. installs what is missing (install-tools.sh: ruby, ruby-ffi, JNA, Guava, kotlin-compiler)
#   2. builds the library and the generator, regenerates the Kotlin and Ruby sources and fails
#      on a diff (the committed sources must match the library); the crate's unit tests; KDoc
#   3. builds the jar (make kotlin) and the gem's library (make ruby)
#   4. starts a disposable redis-server (tests/redis-server.sh), stops it by PID on exit
#   5. both runners replay every conformance-vectors/*.json on memory and on Redis (Kotlin also
#      through the suspend API, Ruby through the async one) and must report the Rust CLI's totals
#   6. the Kotlin and Ruby tests, with Redis
#   7. the quick starts in README.md are the files run here, and they run: Kotlin, Java, and Ruby
#      against the gem built and installed from ruby/throttlekit.gemspec
# Environment: PROFILE (debug|release, default debug), CARGO_TARGET_DIR.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export PROFILE=${PROFILE:-debug}
LIBDIR=${CARGO_TARGET_DIR:-$ROOT/target}/$PROFILE
step() { printf '\n== %s\n' "$*"; }

step "tools"
"$HERE/install-tools.sh"

step "build the library and regenerate the Kotlin and Ruby sources"
make -s -C "$HERE" generate PROFILE="$PROFILE"
if ! git -C "$ROOT" diff --exit-code -- bindings-uniffi/kotlin/src bindings-uniffi/ruby/lib; then
    echo "the generated sources are out of date: commit the regenerated files" >&2
    exit 1
fi

step "the crate's unit tests (argument conversions, error codes)"
UNIT=$(cd "$ROOT" && cargo test -q --locked -p throttlekit-uniffi --features bindgen 2>&1) \
    || { echo "$UNIT"; echo "cargo test -p throttlekit-uniffi failed" >&2; exit 1; }
grep "test result" <<<"$UNIT"

step "KDoc on every public declaration of the generated Kotlin"
python3 "$HERE/kotlin/check-kdoc.py" "$HERE/kotlin/src/dev/throttlekit/throttlekit.kt"

step "build the jar and the gem's library"
make -s -C "$HERE" kotlin ruby PROFILE="$PROFILE"

WORK=$(mktemp -d)
cleanup() {
    "$ROOT/tests/redis-server.sh" stop "$WORK/redis.pid" || true
    rm -rf "$WORK" || true
}
trap cleanup EXIT
step "start a disposable redis-server"
URL=$("$ROOT/tests/redis-server.sh" start "$WORK/redis.pid")
echo "$URL (pid $(cat "$WORK/redis.pid"))"

K=$HERE/.tools/node_modules/kotlin-compiler/lib
CP=$HERE/build/throttlekit.jar:/usr/share/java/jna.jar:$K/kotlinx-coroutines-core-jvm.jar:$K/kotlin-stdlib.jar
jvm() { java -Djna.library.path="$LIBDIR" -cp "$HERE/build/throttlekit-tools.jar:$HERE/build/example:$CP" "$@"; }

step "the Rust CLI's totals on the same files"
VECTORS=("$ROOT"/conformance-vectors/*.json)
RUST=$(cd "$ROOT" && cargo run -q --locked -p throttlekit-cli --bin throttlekit -- conformance "${VECTORS[@]}" | tail -1)
echo "rust: $RUST"

step "conformance runners: Kotlin and Ruby, memory and Redis"
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
run_runner "kotlin memory" "$HERE/kotlin/tk-conformance" --store memory
run_runner "kotlin memory (suspend)" "$HERE/kotlin/tk-conformance" --store memory --api suspend
run_runner "kotlin redis" "$HERE/kotlin/tk-conformance" --store redis --redis-url "$URL"
run_runner "kotlin redis (suspend)" "$HERE/kotlin/tk-conformance" --store redis --redis-url "$URL" --api suspend
run_runner "ruby memory" "$HERE/ruby/tk-conformance" --store memory
run_runner "ruby memory (async)" "$HERE/ruby/tk-conformance" --store memory --api async
run_runner "ruby redis" "$HERE/ruby/tk-conformance" --store redis --redis-url "$URL"
run_runner "ruby redis (async)" "$HERE/ruby/tk-conformance" --store redis --redis-url "$URL" --api async
# A malformed file is exit status 2 with a message, in both runners.
echo '{"suites": [{"id": "x", "ops": [], "bogus": 1}]}' >"$WORK/bad.json"
for runner in "$HERE/kotlin/tk-conformance" "$HERE/ruby/tk-conformance"; do
    set +e
    "$runner" "$WORK/bad.json" 2>"$WORK/err"
    status=$?
    set -e
    [ "$status" -eq 2 ] && grep -q "unknown field" "$WORK/err" \
        || { echo "$runner: a malformed file gave status $status: $(cat "$WORK/err")" >&2; exit 1; }
done

step "Kotlin tests (with Redis)"
jvm dev.throttlekit.test.TestsKt "$URL"

step "Ruby tests (with Redis)"
ruby "$HERE/ruby/test/test_throttlekit.rb" "$URL"

step "the README's quick starts are these files, and they run"
python3 - "$HERE/README.md" "$HERE/kotlin/example/QuickStart.kt" "$HERE/kotlin/example/QuickStart.java" \
    "$HERE/ruby/example/quickstart.rb" <<'PY'
import sys
readme = open(sys.argv[1]).read()
for path in sys.argv[2:]:
    if open(path).read().strip() not in readme:
        sys.exit(f"README.md does not show {path} verbatim")
PY
# The root README's short Kotlin and Ruby snippets are excerpts of the same files.
python3 - "$ROOT/README.md" "$HERE/kotlin/example/QuickStart.kt" "$HERE/ruby/example/quickstart.rb" <<'PY'
import re, sys
readme = open(sys.argv[1]).read()
section = readme[readme.index("### Kotlin/JVM and Ruby"):]
section = section[: section.index("\n## ")]
for lang, path in (("kotlin", sys.argv[2]), ("ruby", sys.argv[3])):
    blocks = re.findall(r"```" + lang + r"\n(.*?)```", section, re.S)
    if not blocks:
        sys.exit(f"README.md has no {lang} snippet in its Kotlin/JVM and Ruby section")
    body = "\n".join(l.strip() for l in open(path).read().splitlines())
    for block in blocks:
        if "\n".join(l.strip() for l in block.strip().splitlines()) not in body:
            sys.exit(f"README.md's {lang} snippet is not an excerpt of {path}")
PY
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
for cmd in "jvm QuickStartKt $URL" "jvm QuickStart $URL" "env -u THROTTLEKIT_LIB GEM_PATH=$GEM_PATH_RUN ruby $HERE/ruby/example/quickstart.rb $URL"; do
    out=$($cmd)
    echo "$out" | sed "s/^/  /"
    expected_quickstart "$out" || { echo "quick start '$cmd' printed something else" >&2; exit 1; }
done

echo
echo "bindings-uniffi: all passed"
