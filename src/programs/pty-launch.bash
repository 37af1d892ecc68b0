# How a sandboxed run on a terminal starts bubblewrap (bash, outside the sandbox). node-pty cannot
# hand its child extra descriptors, so this opens them itself: each bind source the gateway opened
# and checked (process/bwrap/launch.ts), verified to be the same inode (`-ef` against the gateway's own
# descriptor), and the seccomp filter; bubblewrap's options go through a pipe on descriptor 3.
# Paths only on its argv; the environment is the run's, as bubblewrap's would be.
# (src/process/spawner/pty.ts)
#
#   bash -c "$(cat pty-launch.bash)" execgate-launch GATEWAY_PID SOURCES OPTIONS \
#     [KIND PATH GATEWAY_FD]... [OPTION]... LAUNCHER [ARG]...
#   KIND `bind`: checked against GATEWAY_FD; `file`: opened as it is.
gw=$1; n=$2; k=$3; shift 3; fd=4
while (( n-- > 0 )); do
  if ! { eval "exec $fd<\"\$2\"" && { [[ $1 == file ]] || [ "/proc/self/fd/$fd" -ef "/proc/$gw/fd/$3" ]; }; } 2>/dev/null; then
    printf 'execgate: %s changed while its sandbox was being set up\n' "$2"; exit 125
  fi
  fd=$((fd + 1)); shift 3
done
o=("${@:1:k}"); shift "$k"
exec 3< <(printf '%s\0' "${o[@]}")
exec "$@"
