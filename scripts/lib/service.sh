# What the scripts that run a local server for the tests share
# (scripts/opensearch.sh, otelcol.sh, s3.sh): a state dir $STATE holding
# the server's pid, one command at a time per state dir, and a stop that
# waits for the process to go.
#
# The sourcing script sets NAME (for messages) and STATE (an absolute path)
# first.

die() { echo "$NAME: $*" >&2; exit 1; }

# Whether process $1 lives. A killed server is reaped by whatever adopted
# it (init, or a container's first process), which may take its time:
# until then it is a zombie, which `kill -0` still finds.
alive() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 1
  [[ $state != Z* ]]
}

running() {
  [[ -f $STATE/pid ]] && alive "$(cat "$STATE/pid")"
}

# A port free on loopback for both TCP and UDP, from below the kernel's
# ephemeral range (as tests/common's free_port picks them): a server that
# keeps its ports across a restart finds them free again, since no
# outgoing connection is given one of them while it is stopped.
free_port() {
  python3 - <<'PY'
import random, socket
try:
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
except (OSError, ValueError, IndexError):
    low = 32768
ports = list(range(10000, max(low, 10001)))
random.shuffle(ports)
for port in ports:
    try:
        with socket.socket() as t, socket.socket(type=socket.SOCK_DGRAM) as u:
            t.bind(("127.0.0.1", port))
            u.bind(("127.0.0.1", port))
    except OSError:
        continue
    print(port)
    break
PY
}

# Stops the server (SIGTERM, then SIGKILL after 100 waits of $1 seconds).
stop_server() {
  running || { rm -f "$STATE/pid"; return 0; }
  local pid; pid=$(cat "$STATE/pid")
  kill "$pid"
  for _ in $(seq 1 100); do alive "$pid" || break; sleep "$1"; done
  if alive "$pid"; then kill -9 "$pid"; fi
  rm -f "$STATE/pid"
}

# One command at a time per state dir: concurrent test binaries or threads
# asking for the same server must not start two.
lock_state() {
  exec 9> "$STATE/.lock"
  flock 9
}
