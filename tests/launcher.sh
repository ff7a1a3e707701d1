# Sourced by the server launchers (tests/redis-server.sh, redis-cluster.sh, redis-sentinels.sh,
# redis-tls.sh, postgres-server.sh): what they share to start a server on a free loopback port,
# know it is theirs that answers, and wait, by PID, for a server they stopped to exit.

# A loopback port nobody holds right now (another test may take it before our server binds it:
# the launchers ask for a fresh one on every attempt).
free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# serving_pid PORT [redis-cli login args]: the PID of the redis-server answering on PORT (empty
# when none answers).
serving_pid() {
  redis-cli -p "$@" info server 2>/dev/null | tr -d '\r' | sed -n 's/^process_id://p'
}

# serves PID PORT [redis-cli login args]: waits up to 10 s until the redis-server answering on
# PORT is PID, the one we started (not a server someone else started on a port we thought free);
# fails at once if PID exits, and after 10 s.
serves() {
  local pid=$1 i
  shift
  for ((i = 0; i < 200; i++)); do
    kill -0 "$pid" 2>/dev/null || return 1
    [ "$(serving_pid "$@")" = "$pid" ] && return 0
    sleep 0.05
  done
  return 1
}

# Stopping: the servers outlive the launcher that started them, so their parent is then init,
# and one that exits stays a zombie until init reaps it (about two seconds on the CI machines,
# a firecracker VM's init), while `kill -0` succeeds on a zombie. A zombie has exited: its
# ports, sockets and files are released. So a process counts as running here only while it
# exists and is not a zombie.

# running PID: PID is a process that has not exited (its state in /proc/PID/stat is not Z).
running() {
  local stat
  [ -d /proc/self ] || { kill -0 "$1" 2>/dev/null; return; }
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }
  [ "${stat:0:1}" != Z ]
}

# wait_exit PID [TRIES]: waits until PID has exited, polling every 50 ms at most TRIES times
# (default 100: 5 s); fails if it is still running then.
wait_exit() {
  local i
  for ((i = 0; i < ${2:-100}; i++)); do
    running "$1" || return 0
    sleep 0.05
  done
  ! running "$1"
}
