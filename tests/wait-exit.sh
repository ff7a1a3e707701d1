# Sourced by the server launchers (tests/redis-server.sh, redis-cluster.sh, redis-sentinels.sh,
# redis-tls.sh, postgres-server.sh): waiting, by PID, for a server they stopped to exit.
#
# Those servers outlive the launcher that started them, so their parent is then init, and once
# one exits it stays a zombie until init reaps it: on the CI machines (a firecracker VM's init)
# that takes about two seconds, and `kill -0` succeeds on a zombie. A loop on `kill -0` waited
# those seconds for every server (30 s at the end of the Python suite alone, whose session
# stops ten of them). A zombie has exited: its ports, sockets and files are released. So a
# process counts as running here only while it exists and is not a zombie.

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
