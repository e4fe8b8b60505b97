# Sourced by test scripts that start a server of their own on 127.0.0.1
# (the shell counterpart of phpt/inc/listen.inc).
#
# listen_start START READY starts a server on a free port and sets $port
# and $listen_pid. START PORT starts the server in the background and sets
# listen_pid; READY PORT succeeds once it answers. A port found free can be
# taken by another process before the server binds it (suites run at
# once): a server that exits, or a port that answers while ours is gone,
# starts over on another port. The wait is a 60 s hang catch, not a speed
# bound: under valgrind or a loaded host a server takes seconds to start.

listen_free_port() {
  php -n -r '$s = stream_socket_server("tcp://127.0.0.1:0"); echo substr(strrchr(stream_socket_get_name($s, false), ":"), 1);'
}

listen_start() {
  local start=$1 ready=$2 deadline=$((SECONDS + 60))
  while ((SECONDS < deadline)); do
    port=$(listen_free_port)
    "$start" "$port"
    while ((SECONDS < deadline)) && kill -0 "$listen_pid" 2>/dev/null; do
      if "$ready" "$port"; then
        kill -0 "$listen_pid" 2>/dev/null && return 0
        break # another process's server on the port ours could not bind
      fi
      sleep 0.05
    done
    kill "$listen_pid" 2>/dev/null || true
    wait "$listen_pid" 2>/dev/null || true
  done
  echo "$start: no server accepted connections within 60 s" >&2
  return 1
}
