#!/usr/bin/env bash
# dist/libthrottlekit-V-x86_64-linux-gnu.tar.gz from the zig-linked dist build (build.sh):
#
#   libthrottlekit-V-x86_64-linux-gnu/
#     include/throttlekit.h
#     lib/libthrottlekit.so.V, lib/libthrottlekit.so.<soname ABI> -> .so.V, lib/libthrottlekit.so -> soname
#     lib/libthrottlekit.a
#     lib/pkgconfig/throttlekit.pc   prefix=${pcfiledir}/../..: valid wherever the tree is extracted
#     README.md, LICENSE
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/env.sh"

name=libthrottlekit-$VERSION-x86_64-linux-gnu
tree=$STAGE/c/$name
rm -rf "$STAGE/c"
mkdir -p "$tree/include" "$tree/lib/pkgconfig"
so=$NATIVE_OUT/libthrottlekit.so
soname=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
[ -n "$soname" ] || { echo "$so has no soname" >&2; exit 1; }

install -m 644 "$ROOT/bindings-c/include/throttlekit.h" "$tree/include/"
install -m 755 "$so" "$tree/lib/libthrottlekit.so.$VERSION"
ln -s "libthrottlekit.so.$VERSION" "$tree/lib/$soname"
ln -s "$soname" "$tree/lib/libthrottlekit.so"
install -m 644 "$NATIVE_OUT/libthrottlekit.a" "$tree/lib/"
# The same template `make -C bindings-c install` fills with an absolute prefix.
sed -e 's|@PREFIX@|${pcfiledir}/../..|' -e "s|@VERSION@|$VERSION|" "$ROOT/bindings-c/throttlekit.pc.in" \
    > "$tree/lib/pkgconfig/throttlekit.pc"
install -m 644 "$ROOT/bindings-c/dist/README.md" "$ROOT/LICENSE" "$tree/"

# Reproducible: fixed owner, mtime and order.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$STAGE/c" -czf "$DIST/$name.tar.gz" "$name"
echo "dist/$name.tar.gz:"
tar -tvzf "$DIST/$name.tar.gz"
