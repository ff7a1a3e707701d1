#!/usr/bin/env bash
# Runs a go command on tkgin against Debian's gin, in GOPATH mode:
#   bindings-c/go/tkgin/go.sh test -count=1 -v .
#   bindings-c/go/tkgin/go.sh build -o BIN ./examples/gin
#   TKGIN_DIR=/some/project bindings-c/go/tkgin/go.sh run .   # a user's project that imports tkgin
# Debian's golang-github-gin-gonic-gin-dev puts gin and its dependencies' sources under
# /usr/share/gocode/src, and the only registries reachable here serve no Go modules, so the
# package builds the way Debian builds Go: GO111MODULE=off, with a private GOPATH whose src/
# links this repo's Go package (example.invalid/throttlekit/go) beside Debian's tree.
# Installs the gin package when it is missing. The caller sets PKG_CONFIG_PATH / CGO_LDFLAGS
# for libthrottlekit, as for the parent package.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
GO_DIR=$(dirname "$HERE")
GOCODE=/usr/share/gocode
if [ ! -f "$GOCODE/src/github.com/gin-gonic/gin/gin.go" ]; then
  [ "$(id -u)" = 0 ] || { echo "tkgin needs golang-github-gin-gonic-gin-dev (apt-get install)" >&2; exit 1; }
  echo "installing: golang-github-gin-gonic-gin-dev" >&2
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends golang-github-gin-gonic-gin-dev >&2
fi
GOPATH_DIR=${CARGO_TARGET_DIR:-$GO_DIR/../../target}/tkgin-gopath
mkdir -p "$GOPATH_DIR/src/example.invalid/throttlekit"
ln -sfn "$GO_DIR" "$GOPATH_DIR/src/example.invalid/throttlekit/go"
cd "${TKGIN_DIR:-$GOPATH_DIR/src/example.invalid/throttlekit/go/tkgin}"
GO111MODULE=off GOPATH="$GOPATH_DIR:$GOCODE" GOFLAGS= exec go "$@"
