#!/usr/bin/env bash
# Unpacks the toolchain of the WebAssembly build into target/wasm-toolchain/ (gitignored with the
# rest of target/) and prints nothing else when it is already there:
#   - Debian's rustc-web 1.96 (its rustc alone) (bookworm-security), whose rust-web-src lets cargo build the wasm32
#     standard library (-Zbuild-std): rustup here has no wasm32-unknown-unknown std and cannot fetch one;
#   - wasm-ld from lld-16 (with the LLVM library it links against);
#   - wasm-bindgen-cli, pinned to the version of the wasm-bindgen crate in Cargo.lock;
#   - wasm-opt from npm's binaryen.
# The packages are `apt-get download`ed and `dpkg -x`ed, never installed: an installed rustc-web puts
# a second cargo and rustc in /usr/bin, which tests/dist.sh's "no Rust toolchain" environment finds.
# Prints the `export` lines that bindings-wasm/build.sh evaluates.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
tc="${THROTTLEKIT_WASM_TOOLCHAIN:-$root/target/wasm-toolchain}"
mkdir -p "$tc"
# rustc-web links against libLLVM 22 and wasm-ld against libLLVM 16, neither installed here. cargo
# is the project's own (rustup's, which takes -Zbuild-std with RUSTC_BOOTSTRAP=1): cargo-web would need
# libgit2 too.
debs=(rustc-web libstd-rust-web-1.96 libstd-rust-web-dev rust-web-src libllvm22 lld-16 libllvm16)

if [ ! -e "$tc/.unpacked" ]; then
  mkdir -p "$tc/debs"
  (
    cd "$tc/debs"
    missing=()
    for d in "${debs[@]}"; do ls "${d}"_*.deb >/dev/null 2>&1 || missing+=("$d"); done
    if [ ${#missing[@]} -gt 0 ]; then
      apt-get download "${missing[@]}" >&2 || {
        SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
        $SUDO apt-get -o DPkg::Lock::Timeout=300 update -qq >&2
        apt-get download "${missing[@]}" >&2
      }
    fi
  )
  for f in "$tc"/debs/*.deb; do dpkg -x "$f" "$tc/sysroot"; done
  touch "$tc/.unpacked"
fi

usr="$tc/sysroot/usr"
libs="$usr/lib/x86_64-linux-gnu:$usr/lib/llvm-16/lib"
# Debian's rustc looks for its sysroot next to the binary; the unpacked usr/ is that sysroot, and the
# unpacked rust-web-src sits in it (usr/lib/rustlib/src/rust), where -Zbuild-std looks.
rustc_bin="$(ls "$usr"/bin/rustc* 2>/dev/null | head -1)"
wasm_ld="$usr/lib/llvm-16/bin/wasm-ld"
[ -x "$rustc_bin" ] && [ -x "$wasm_ld" ] || {
  echo "wasm-toolchain: rustc or wasm-ld missing under $usr" >&2; exit 1; }

# wasm-bindgen-cli must match the wasm-bindgen crate exactly (the glue's schema is versioned).
want="$(awk '/^name = "wasm-bindgen"$/{getline; gsub(/[^0-9.]/,""); print; exit}' "$root/Cargo.lock" 2>/dev/null || true)"
if [ -n "$want" ]; then
  have="$("$tc/bin/wasm-bindgen" --version 2>/dev/null | awk '{print $2}' || true)"
  if [ "$have" != "$want" ]; then
    # Built with the project's rustup toolchain (a native tool). Not --locked: its lock file pins a
    # webpki-roots release the registry no longer offers. Only the `wasm-bindgen` binary, without
    # the test runner's TLS (ring) and at opt-level 1: it runs once per build on a 350 KB module,
    # and a fresh machine's `make test` pays for compiling it.
    env -u RUSTC -u CARGO CARGO_PROFILE_RELEASE_OPT_LEVEL=1 CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
      CARGO_PROFILE_RELEASE_LTO=false \
      cargo install --quiet --root "$tc" wasm-bindgen-cli --version "=$want" \
      --no-default-features --bin wasm-bindgen >&2
  fi
fi

if [ ! -x "$tc/node_modules/.bin/wasm-opt" ]; then
  npm install --silent --no-audit --no-fund --prefix "$tc" binaryen@132.0.0 >&2
fi

cat <<OUT
export WASM_TC='$tc'
export RUSTC='$rustc_bin'
export LD_LIBRARY_PATH='$libs'\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
export CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_LINKER='$wasm_ld'
export WASM_BINDGEN='$tc/bin/wasm-bindgen'
export WASM_OPT='$tc/node_modules/.bin/wasm-opt'
OUT
