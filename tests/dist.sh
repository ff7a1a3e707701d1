#!/usr/bin/env bash
# The release artifacts install and decide correctly where no Rust toolchain exists.
#
#   tests/dist.sh          # make dist, then every check below
#   DIST_REUSE=1 tests/dist.sh    # reuse an existing dist/ (iterating on the checks)
#   DIST_FULL_PROFILE=1 tests/dist.sh   # build with the dist profile exactly as `make dist` does
#
# 1. `make dist` (scripts/dist/build.sh; its version check fails on any disagreement).
# 2. In an environment with no cargo and no rustc on the PATH, and CARGO_HOME / RUSTUP_HOME
#    pointing at empty directories (checked: `command -v cargo` fails there):
#    - the wheel: `pip install --no-index` into a fresh venv, `python -m throttlekit.conformance`;
#    - npm: both tarballs into a fresh project offline with an empty cache,
#      `throttlekit-conformance`; the addon is the platform package's; without the platform
#      package the install fails and says what to do;
#    - C: the tarball extracted on its own, tk-conformance and the C unit tests compiled against
#      it through its own pkg-config file (shared and static), and the Go package's tests;
#    - the JVM jar: the Java runner compiled against it and run with plain `java`, with
#      java.io.tmpdir on a noexec mount (the loader falls back to ~/.cache/throttlekit);
#    and every native binary needs no glibc symbol newer than 2.17.
# 3. With cargo: the .crate unpacked outside the workspace and its CLI built and run; the sdist
#    built from source (pip) in a fresh venv and imported; `auditwheel show` says manylinux_2_17.
# Every runner must replay every conformance-vectors/*.json with 0 failures and the same total as
# the unpacked crate's CLI.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/dist/env.sh"
cd "$ROOT"
VECTORS=("$ROOT"/conformance-vectors/*.json)

if [ "${DIST_REUSE:-0}" != 1 ] || [ ! -d "$DIST" ]; then
    step "make dist"
    # What this suite checks is packaging: the files, their tags, the glibc floor, installing
    # without a toolchain and the decisions. The dist profile's optimisations (opt-level 3, thin
    # LTO, one codegen unit) are what `make dist` keeps; here they would only make the suite's
    # release builds its slowest step, so it relaxes them (DIST_FULL_PROFILE=1 keeps them).
    # opt-level 0 halves the CPU time of the native libraries' build (106 s against 209 s);
    # debug assertions and overflow checks stay off, as in the dist profile, so the artifacts
    # behave as the released ones do and the decisions replayed are the same.
    if [ "${DIST_FULL_PROFILE:-0}" != 1 ]; then
        export CARGO_PROFILE_DIST_LTO=off CARGO_PROFILE_DIST_CODEGEN_UNITS=16 CARGO_PROFILE_DIST_OPT_LEVEL=0
    fi
    # `cargo package`'s own verification build is the one this suite does below (the .crate
    # unpacked outside the workspace, built and run), so it is not done twice.
    DIST_ALLOW_DIRTY=1 DIST_PACKAGE_NO_VERIFY=1 scripts/dist/build.sh
else
    python3 scripts/dist/check_versions.py "$DIST"
fi
dist_tools # auditwheel and cargo-zigbuild's PATH, here too

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Succeeds only for "N passed, 0 failed" equal to the reference total.
REFERENCE=""
expect_all_passed() {
    local who=$1 line=$2
    echo "$who: $line"
    [[ $line =~ ^([0-9]+)\ passed,\ 0\ failed$ ]] || fail "$who: '$line'"
    [ "${BASH_REMATCH[1]}" -gt 0 ] || fail "$who replayed nothing"
    [ -z "$REFERENCE" ] || [ "$line" = "$REFERENCE" ] || fail "$who: '$line', the crate's CLI: '$REFERENCE'"
}

# The newest GLIBC_x.y symbol version a binary needs must be at most 2.17.
glibc_floor() {
    local newest
    newest=$(objdump -T "$1" | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -V | tail -1)
    echo "$(basename "$1"): needs glibc $newest"
    [ "$(printf '%s\n2.17\n' "$newest" | sort -V | tail -1)" = 2.17 ] || fail "$1 needs glibc $newest > 2.17"
}

step "the version check catches an artifact that disagrees, and a stray file"
bad=$WORK/dist-bad
cp -r "$DIST" "$bad"
plat_tgz=throttlekit-core-linux-x64-gnu-$VERSION.tgz
mkdir "$WORK/repack"
tar -xzf "$bad/$plat_tgz" -C "$WORK/repack"
sed -i "s/\"version\": \"$VERSION\"/\"version\": \"9.9.9\"/" "$WORK/repack/package/package.json"
tar -czf "$bad/$plat_tgz" -C "$WORK/repack" package
touch "$bad/throttlekit-0.0.1.crate"
if python3 scripts/dist/check_versions.py "$bad" >"$WORK/bad.log" 2>&1; then
    fail "check_versions.py accepted a package of version 9.9.9"
fi
grep -q "$plat_tgz: version: '9.9.9', expected '$VERSION'" "$WORK/bad.log" \
    && grep -q "throttlekit-0.0.1.crate: not an artifact of version $VERSION" "$WORK/bad.log" \
    || { cat "$WORK/bad.log"; fail "check_versions.py did not name both disagreements"; }
cat "$WORK/bad.log"

step "the .crate, unpacked outside the workspace: a program depending on it replays the vectors"
mkdir "$WORK/crate"
tar -xzf "$DIST/throttlekit-$VERSION.crate" -C "$WORK/crate"
crate=$WORK/crate/throttlekit-$VERSION
# The CLI lives in the workspace's throttlekit-cli crate (it also carries `serve`), so the
# packaged library is checked as a user meets it: as a dependency of a new program that
# replays the vectors through its public conformance API.
replay=$WORK/crate/replay
mkdir -p "$replay/src"
cat > "$replay/Cargo.toml" <<TOML
[package]
name = "replay"
version = "0.0.0"
edition = "2021"
[dependencies]
throttlekit = { path = "$crate" }
[workspace]
TOML
cat > "$replay/src/main.rs" <<'RUST'
use std::sync::Arc;
fn main() {
    let mut total = throttlekit::conformance::Report::default();
    for f in std::env::args().skip(1) {
        let mut stores = || Ok(Arc::new(throttlekit::MemoryStore::new()) as Arc<dyn throttlekit::Store>);
        total.merge(throttlekit::conformance::replay_path(std::path::Path::new(&f), &mut stores).expect("replay"));
    }
    println!("{}", total.summary());
}
RUST
# Its binaries go to CHECK_TARGET, apart from the workspace's target/ so as not to overwrite the
# workspace's; its intermediate artifacts go to the workspace's build dir (cargo's
# build.build-dir), so every dependency the earlier suites (and `cargo package`'s verification)
# compiled in the debug profile is reused, not compiled a second time. The crate's own
# Cargo.lock pins what the replay program resolves.
CHECK_TARGET=$CARGO_TARGET_DIR/dist-check
export CARGO_BUILD_BUILD_DIR=$CARGO_TARGET_DIR
locked=()
if [ -f "$crate/Cargo.lock" ]; then cp "$crate/Cargo.lock" "$replay/Cargo.lock"; locked=(--locked); fi
(cd "$crate" && CARGO_TARGET_DIR=$CHECK_TARGET cargo build "${locked[@]}" -q --lib)
(cd "$replay" && CARGO_TARGET_DIR=$CHECK_TARGET cargo build -q)
[ -z "$(cd "$crate" && cargo locate-project --workspace --message-format plain | grep -v "^$crate/Cargo.toml$")" ] \
    || fail "the unpacked crate sees a workspace above it"
REFERENCE=""
line=$("$CHECK_TARGET/debug/replay" "${VECTORS[@]}" | tail -1)
expect_all_passed "crate library" "$line"
REFERENCE=$line

step "the sdist: pip builds it from source (cargo present) into a fresh venv"
python3 -m venv "$WORK/sdist-venv"
# The debug profile: this proves the sdist is complete, not how fast it runs.
MATURIN_PEP517_ARGS="--profile dev" CARGO_TARGET_DIR=$CHECK_TARGET "$WORK/sdist-venv/bin/pip" install -q --disable-pip-version-check \
    "$DIST/throttlekit_core-$VERSION.tar.gz"
(cd "$WORK" && "$WORK/sdist-venv/bin/python" -c 'import throttlekit, sys; l = throttlekit.Limiter(throttlekit.Strategy.gcra(1, 1000)); assert l.check_sync("k").allowed and not l.check_sync("k").allowed; print("sdist build imports:", throttlekit.__file__)')

step "the wheel's tag"
wheel=$(ls "$DIST"/throttlekit_core-"$VERSION"-cp310-abi3-*manylinux_2_17_x86_64.whl)
auditwheel show "$wheel" | tee "$WORK/auditwheel.txt"
grep -q '"manylinux_2_17_x86_64"' "$WORK/auditwheel.txt" || fail "auditwheel: not manylinux_2_17"

step "an environment without a Rust toolchain"
mkdir -p "$WORK/empty-cargo-home" "$WORK/empty-rustup-home"
notool_path=""
IFS=: read -ra dirs <<<"$PATH"
for d in "${dirs[@]}"; do
    [ -e "$d/cargo" ] || [ -e "$d/rustc" ] || [ -e "$d/cargo-zigbuild" ] || notool_path+="${notool_path:+:}$d"
done
notool() { env PATH="$notool_path" CARGO_HOME="$WORK/empty-cargo-home" RUSTUP_HOME="$WORK/empty-rustup-home" "$@"; }
notool bash -c '! command -v cargo && ! command -v rustc && ! command -v zig' >/dev/null \
    || fail "cargo, rustc or zig is still reachable"
for tool in python3 node npm cc pkg-config go tar java javac jar; do
    # A cargo installed next to them (say, Debian's in /usr/bin) would have dropped their directory.
    notool bash -c "command -v $tool" >/dev/null || fail "$tool is not reachable once cargo's directories are left out of the PATH"
done
echo "PATH without cargo/rustc: $notool_path"

step "wheel: pip install --no-index into a fresh venv, replay the vectors"
notool python3 -m venv "$WORK/venv"
notool "$WORK/venv/bin/pip" install -q --disable-pip-version-check --no-index "$wheel"
py_line=$(cd "$WORK" && notool "$WORK/venv/bin/python" -m throttlekit.conformance "${VECTORS[@]}" | tail -1)
expect_all_passed "python (wheel)" "$py_line"
so=$(ls "$WORK"/venv/lib/python3*/site-packages/throttlekit/_throttlekit*.so)
glibc_floor "$so"

step "npm: both tarballs into a fresh project, offline, empty cache"
project=$WORK/npm-project
mkdir "$project"
echo '{"name":"fresh","version":"1.0.0","private":true}' >"$project/package.json"
npm_install() { notool npm install --offline --no-audit --no-fund --loglevel=error --cache "$WORK/npm-cache" "$@"; }
(cd "$project" && npm_install "$DIST/throttlekit-core-$VERSION.tgz" "$DIST/throttlekit-core-linux-x64-gnu-$VERSION.tgz")
[ -z "$(find "$project/node_modules/@throttlekit/core" -name '*.node')" ] || fail "@throttlekit/core carries a .node itself"
addon=$(cd "$project" && notool node -p "require('./node_modules/@throttlekit/core/lib/platform.js').findBinding()")
[ "$addon" = "$project/node_modules/@throttlekit/core-linux-x64-gnu/throttlekit.linux-x64-gnu.node" ] \
    || fail "the addon came from $addon, not the platform package"
glibc_floor "$addon"
node_line=$(cd "$project" && notool npm exec --offline --cache "$WORK/npm-cache" -- throttlekit-conformance "${VECTORS[@]}" | tail -1)
expect_all_passed "node (npm tarballs)" "$node_line"
(cd "$project" && notool node --input-type=module -e "import { Limiter, Strategy } from '@throttlekit/core'; const l = new Limiter({ strategy: Strategy.gcra({ limit: 1, periodMs: 1000 }) }); if (!l.checkSync('k').allowed || l.checkSync('k').allowed) process.exit(1)")
# The WebAssembly build ships in the same tarball (bindings-node/wasm/): its runner replays the vectors.
wasm_line=$(cd "$project" && notool node node_modules/@throttlekit/core/wasm/conformance.mjs "${VECTORS[@]}" | tail -1)
expect_all_passed "wasm (npm tarball)" "$wasm_line"

step "npm: no prebuilt package and no cargo: the install fails and says what to do"
bare=$WORK/npm-bare
mkdir "$bare"
echo '{"name":"bare","version":"1.0.0","private":true}' >"$bare/package.json"
if (cd "$bare" && npm_install --omit=optional "$DIST/throttlekit-core-$VERSION.tgz") >"$WORK/bare.log" 2>&1; then
    fail "npm install without the platform package succeeded"
fi
grep -q 'no native addon for linux-x64-gnu' "$WORK/bare.log" && grep -q 'https://rustup.rs' "$WORK/bare.log" \
    && grep -q 'npm install ./bindings-node' "$WORK/bare.log" || { cat "$WORK/bare.log"; fail "the install error does not say what to do"; }
grep -m1 'no native addon' "$WORK/bare.log"

step "C: the tarball in a directory of its own, built against through its pkg-config file"
mkdir "$WORK/c"
tar -xzf "$DIST/libthrottlekit-$VERSION-x86_64-linux-gnu.tar.gz" -C "$WORK/c"
tree=$WORK/c/libthrottlekit-$VERSION-x86_64-linux-gnu
for f in include/throttlekit.h lib/libthrottlekit.so lib/libthrottlekit.a lib/pkgconfig/throttlekit.pc README.md LICENSE; do
    [ -e "$tree/$f" ] || fail "the C tarball has no $f"
done
export PKG_CONFIG_PATH=$tree/lib/pkgconfig
libdir=$(pkg-config --variable=libdir throttlekit)
[ "$(cd "$libdir" && pwd -P)" = "$(cd "$tree/lib" && pwd -P)" ] || fail "throttlekit.pc points at $libdir, not into the extracted tree"
[ "$(pkg-config --modversion throttlekit)" = "$VERSION" ] || fail "throttlekit.pc version"
soname=$(readelf -d "$tree/lib/libthrottlekit.so" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
[ -L "$tree/lib/$soname" ] && [ -f "$tree/lib/libthrottlekit.so.$VERSION" ] || fail "no $soname link to libthrottlekit.so.$VERSION"
glibc_floor "$tree/lib/libthrottlekit.so.$VERSION"
CFLAGS=(-std=c11 -O1 -Wall -Wextra -Werror)
# shellcheck disable=SC2046
notool cc "${CFLAGS[@]}" $(pkg-config --cflags throttlekit) bindings-c/tests/tk_conformance.c bindings-c/tests/tk_conformance_adaptive.c \
    $(pkg-config --libs throttlekit) $(pkg-config --libs libcjson) -Wl,-rpath,"$libdir" -o "$WORK/tk-conformance"
# shellcheck disable=SC2046
notool cc "${CFLAGS[@]}" $(pkg-config --cflags throttlekit) bindings-c/tests/test_throttlekit.c \
    $(pkg-config --libs throttlekit) -lpthread -Wl,-rpath,"$libdir" -o "$WORK/test_throttlekit"
# shellcheck disable=SC2046
notool cc "${CFLAGS[@]}" $(pkg-config --cflags throttlekit) bindings-c/tests/test_throttlekit.c \
    "$libdir/libthrottlekit.a" $(pkg-config --libs-only-l --static throttlekit | sed 's/-lthrottlekit//') \
    -o "$WORK/test_throttlekit_static"
readelf -d "$WORK/tk-conformance" | grep -q "NEEDED.*\[$soname\]" || fail "tk-conformance does not link $soname"
c_line=$(notool "$WORK/tk-conformance" --store memory "${VECTORS[@]}" | tail -1)
expect_all_passed "C tk-conformance (tarball)" "$c_line"
notool "$WORK/test_throttlekit" | tail -1
notool "$WORK/test_throttlekit_static" | tail -1

step "Go: the cgo package against the tarball (PKG_CONFIG_PATH only)"
go_out=$(cd bindings-c/go && notool env CGO_LDFLAGS="-Wl,-rpath,$libdir" go test -count=1 -v -run 'TestConformanceMemory|Example' ./... 2>&1) \
    || { echo "$go_out"; fail "go test against the tarball"; }
go_line=$(sed -n 's/^go conformance (memory): //p' <<<"$go_out")
expect_all_passed "Go (tarball)" "$go_line"

step "JVM: the jar alone from plain Java (no Rust toolchain), extracted past a noexec tmpdir"
jar_file=$DIST/throttlekit-$VERSION.jar
jvm=$WORK/jvm
mkdir -p "$jvm/tools" "$jvm/home" "$jvm/noexec"
(cd "$jvm" && notool jar --extract --file "$jar_file" native/linux-x86_64/libthrottlekit_jvm.so)
glibc_floor "$jvm/native/linux-x86_64/libthrottlekit_jvm.so"
notool javac -d "$jvm/tools" -cp "$jar_file" --release 17 bindings-jvm/conformance/dev/throttlekit/conformance/*.java
# java.io.tmpdir is a noexec mount (root can mount one; otherwise a directory we cannot write,
# which defeats the same first choice): the loader must fall back to ~/.cache/throttlekit.
if mount -t tmpfs -o noexec,size=64m tmpfs "$jvm/noexec" 2>/dev/null; then
    noexec_mounted=1
else
    noexec_mounted=0
    echo "(no privilege to mount a noexec tmpfs: an unwritable java.io.tmpdir stands in)"
    chmod 555 "$jvm/noexec"
fi
jvm_run() { (cd "$jvm" && notool env HOME="$jvm/home" java -Duser.home="$jvm/home" -Djava.io.tmpdir="$jvm/noexec" "$@"); }
printf 'public class Where { public static void main(String[] a) { System.out.println(dev.throttlekit.ThrottleKit.nativeLibrary()); } }\n' >"$jvm/Where.java"
where=$(jvm_run -cp "$jar_file" "$jvm/Where.java")
echo "loaded from: $where"
[[ $where == "$jvm/home/.cache/throttlekit/"* ]] || fail "the loader did not fall back past the noexec tmpdir: $where"
java_line=$(jvm_run -cp "$jar_file:$jvm/tools" dev.throttlekit.conformance.Conformance "${VECTORS[@]}" | tail -1)
expect_all_passed "java (jar)" "$java_line"
where=$(jvm_run -Dthrottlekit.tmpdir="$jvm/chosen" -cp "$jar_file" "$jvm/Where.java")
[[ $where == "$jvm/chosen/"* ]] || fail "throttlekit.tmpdir was not used: $where"
[ "$noexec_mounted" = 0 ] || umount "$jvm/noexec"

step "make bench's setup on its own (no .venv from make test needed)"
bench_out=$(BENCH_SETUP_ONLY=1 BENCH_OUT="$WORK/bench-logs" bench/run.sh 2>&1) || { echo "$bench_out"; fail "bench setup"; }
echo "$bench_out" | tail -1
[ -x "$ROOT/bench/.peers/venv-tools/bin/maturin" ] || fail "bench/run.sh did not install maturin"

echo
echo "dist: every artifact installs without a Rust toolchain and replays $REFERENCE"
