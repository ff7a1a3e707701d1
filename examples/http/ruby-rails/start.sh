#!/usr/bin/env bash
# ruby-rails: Throttlekit::Rack in a Rails application's middleware stack
# (`config.middleware.use`), served by Debian's puma. On first run it installs what the Rack
# example needs (bindings-uniffi/install-tools.sh) and Debian's ruby-railties and ruby-actionpack
# when missing, builds the gem's library, then execs puma itself, so the PID you started is the
# server's.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../../.." && pwd)
"$ROOT/bindings-uniffi/install-tools.sh" >&2
if ! ruby -e 'require "action_controller/railtie"' 2>/dev/null; then
  [ "$(id -u)" = 0 ] || { echo "ruby-rails needs ruby-railties and ruby-actionpack (apt-get install)" >&2; exit 1; }
  apt-get update -qq >&2
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ruby-railties ruby-actionpack >&2
fi
make -s -C "$ROOT/bindings-uniffi" ruby >&2
export RUBYLIB=$ROOT/bindings-uniffi/ruby/lib${RUBYLIB:+:$RUBYLIB}
echo "ruby-rails listening on http://${HOST:-127.0.0.1}:$1"
exec puma --silent -e production -t 1:4 -b "tcp://${HOST:-127.0.0.1}:$1" "$HERE/config.ru"
