# Where a Node Redis bench's processes run (sourced by bindings-node/bench/run.sh and
# bench/cluster/run.sh), as the Rust Redis benches place theirs (core/benches/support/placement.rs,
# whose doc says why): by default the Redis servers and the node process (every thread) share
# one CPU, the last this shell may use, the same for both sides of every ratio, so a sequential
# call costs the client's work, the server's and two context switches, and never a hand-off
# between vCPUs (40-50 us of CPU each on the project's 2-vCPU KVM guests, and which of the two a
# run gets is the scheduler's choice, anew for every process). `TK_BENCH_PIN=S,C` puts the
# servers on CPU S and the node process on CPU C; `TK_BENCH_PIN=off` leaves placement to the
# scheduler.
#
#   pin_servers PID...   pins every thread of each server
#   pinned CMD...        runs CMD on the clients' CPU (exec'd as is when not pinned)
#   describe_placement   one line for the bench's output

last_cpu() {
  local list
  list=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status)
  list=${list##*,}
  echo "${list##*-}"
}

case "${TK_BENCH_PIN:-}" in
off) PIN_SERVER='' PIN_CLIENT='' ;;
'') PIN_SERVER=$(last_cpu) PIN_CLIENT=$PIN_SERVER ;;
*,*) PIN_SERVER=${TK_BENCH_PIN%%,*} PIN_CLIENT=${TK_BENCH_PIN##*,} ;;
*) echo "TK_BENCH_PIN=$TK_BENCH_PIN: want off or SERVER_CPU,CLIENT_CPU" >&2; exit 2 ;;
esac

pin_servers() {
  [ -n "$PIN_SERVER" ] || return 0
  local pid
  for pid in "$@"; do taskset -a -p -c "$PIN_SERVER" "$pid" >/dev/null; done
}

pinned() {
  if [ -n "$PIN_CLIENT" ]; then taskset -c "$PIN_CLIENT" "$@"; else "$@"; fi
}

describe_placement() {
  if [ -z "$PIN_SERVER" ]; then echo "placement: not pinned (TK_BENCH_PIN=off)"
  elif [ "$PIN_SERVER" = "$PIN_CLIENT" ]; then echo "placement: redis-server(s) and node pinned to CPU $PIN_SERVER (TK_BENCH_PIN=off unpins)"
  else echo "placement: redis-server(s) on CPU $PIN_SERVER, node on CPU $PIN_CLIENT (TK_BENCH_PIN)"; fi
}
