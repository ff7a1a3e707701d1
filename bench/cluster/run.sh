#!/usr/bin/env bash
# The binding rows of the cluster bench (not part of the tests): Python and Node over a private
# 3-master cluster against the same binding on one standalone server. Prints ROW lines.
#   bench/cluster/run.sh [python|node]...   (default: both)
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
parts=${*:-python node}
for part in $parts; do
  case "$part" in
  python)
    python3 "$HERE/python_cluster.py" ;;
  node)
    node "$ROOT/bindings-node/scripts/build.js" --release >/dev/null
    tmp=$(mktemp -d)
    single=$("$ROOT/tests/redis-server.sh" start "$tmp/single")
    # A long node timeout: pinned to one CPU on a loaded machine, a starved node must not be
    # taken for failed (CLUSTERDOWN mid-run); no failover happens in a bench.
    seeds=$(NODE_TIMEOUT_MS=30000 "$ROOT/tests/redis-cluster.sh" start "$tmp/cluster")
    trap '"$ROOT/tests/redis-cluster.sh" stop "$tmp/cluster"; "$ROOT/tests/redis-server.sh" stop "$tmp/single"' EXIT
    source "$ROOT/bindings-node/bench/placement.sh"
    pin_servers $(cat "$tmp/single" "$tmp/cluster")
    TK_BENCH_PLACEMENT=$(describe_placement) SINGLE_PIDFILE="$tmp/single" CLUSTER_PIDFILE="$tmp/cluster" \
      pinned node "$HERE/node_cluster.js" "$single" "$seeds"
    "$ROOT/tests/redis-cluster.sh" stop "$tmp/cluster"; "$ROOT/tests/redis-server.sh" stop "$tmp/single"
    trap - EXIT ;;
  *) echo "unknown part $part" >&2; exit 2 ;;
  esac
done
