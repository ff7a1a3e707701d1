#!/usr/bin/env bash
# Runs one HTTP example server in the foreground:  examples/http/run.sh NAME PORT
#
# Every example serves GET /healthz (never limited) and GET /limited, limited by client IP with
# GCRA 5 per 60 s, burst 5, draft-10 RateLimit fields, policy name "default", no trusted
# proxies. Each NAME is a folder here with a `start.sh PORT` that installs what it needs on
# first run and then `exec`s the server, so the PID you started is the server's.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

available() { (cd "$HERE" && for d in */; do [ -x "$d/start.sh" ] && printf ' %s' "${d%/}"; done); }

if [ $# -ne 2 ]; then
  echo "usage: examples/http/run.sh NAME PORT   (NAME:$(available))" >&2
  exit 2
fi
NAME=$1 PORT=$2
case "$NAME" in
  */* | .*) echo "bad example name: $NAME" >&2; exit 2 ;;
esac
if ! [[ "$PORT" =~ ^[0-9]+$ ]] || [ "$PORT" -lt 1 ] || [ "$PORT" -gt 65535 ]; then
  echo "bad port: $PORT" >&2
  exit 2
fi
if [ ! -x "$HERE/$NAME/start.sh" ]; then
  echo "no example named $NAME (available:$(available))" >&2
  exit 2
fi
exec "$HERE/$NAME/start.sh" "$PORT"
