#!/usr/bin/env bash
# Starts or stops a throwaway TLS redis-server for the Python/Node/C/Go test helpers, with a
# throwaway CA made by openssl.
#
#   tests/redis-tls.sh start DIR   # prints rediss://127.0.0.1:<tls-port>; DIR gets ca.crt,
#                                  # client.crt, client.key (mutual TLS), other-ca.crt and redis.pid
#   tests/redis-tls.sh stop  DIR   # kills that PID (only that one) and removes DIR
#
# The server certificate names IP 127.0.0.1 only (so rediss://localhost:<port> is a wrong host
# name). MUTUAL=1 in the environment makes the server require a client certificate. The server
# also listens in plaintext on a second port (printed on stderr) for the helpers' own checks.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/launcher.sh"
source "$(dirname "${BASH_SOURCE[0]}")/certs.sh"
cmd=${1:-}
dir=${2:?usage: $0 start|stop DIR}

case "$cmd" in
start)
  command -v redis-server >/dev/null && command -v openssl >/dev/null ||
    { echo "redis-server/openssl not found (apt-get install -y redis-server openssl)" >&2; exit 1; }
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  (
    cd "$dir"
    ca ca && ca other-ca
    leaf server 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth,clientAuth\nbasicConstraints=CA:FALSE\n'
    leaf client 'extendedKeyUsage=clientAuth\nbasicConstraints=CA:FALSE\n'
  ) >/dev/null 2>&1 || { echo "openssl failed to make the test certificates" >&2; exit 1; }
  auth=$([ "${MUTUAL:-0}" = 1 ] && echo yes || echo no)
  for attempt in 1 2 3 4 5 6; do
    port=$(free_port)
    tls_port=$(free_port)
    redis-server --port "$port" --tls-port "$tls_port" --bind 127.0.0.1 --save '' --appendonly no \
      --dir "$dir" --protected-mode no --daemonize no --tls-cert-file "$dir/server.crt" \
      --tls-key-file "$dir/server.key" --tls-ca-cert-file "$dir/ca.crt" --tls-auth-clients "$auth" \
      >"$dir/redis.log" 2>&1 &
    pid=$!
    if serves "$pid" "$port"; then
      echo "$pid" >"$dir/redis.pid"
      echo "plaintext port $port" >&2
      echo "rediss://127.0.0.1:$tls_port"
      exit 0
    fi
    echo "redis-server did not serve ports $port/$tls_port (attempt $attempt; log: $dir/redis.log)" >&2
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
  done
  exit 1
  ;;
stop)
  if [ -f "$dir/redis.pid" ]; then
    pid=$(cat "$dir/redis.pid")
    kill "$pid" 2>/dev/null || true
    wait_exit "$pid" || true
  fi
  rm -rf "$dir"
  ;;
*)
  echo "usage: $0 start|stop DIR" >&2
  exit 2
  ;;
esac
