#!/usr/bin/env bash
# ruby-rack: Throttlekit::Rack (bindings-uniffi/ruby/lib/throttlekit/rack.rb) in a Rack app
# served by Debian's puma. On first run it installs ruby, ruby-ffi, ruby-rack and puma when
# missing and builds the gem's library (make -C bindings-uniffi ruby), then execs puma itself,
# so the PID you started is the server's.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
"$ROOT/bindings-uniffi/install-tools.sh" >&2
make -s -C "$ROOT/bindings-uniffi" ruby >&2
export RUBYLIB=$ROOT/bindings-uniffi/ruby/lib${RUBYLIB:+:$RUBYLIB}
echo "ruby-rack listening on http://${HOST:-127.0.0.1}:$1"
exec puma --silent -e production -t 1:4 -b "tcp://${HOST:-127.0.0.1}:$1" "$HERE/config.ru"
