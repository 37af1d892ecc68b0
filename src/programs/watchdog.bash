# execgate's watchdog (bash): one per gateway process, in its own session, holding the read end
# of a pipe from the gateway. The gateway writes `+ RUN_ID` when a run starts and `- RUN_ID` when
# it has settled. When the pipe reaches EOF (the gateway is gone, however it died), every process
# whose environment carries the cookie of a run still listed is stopped and killed, the same sweep
# a timeout ends with. (src/process/watchdog.ts)
#
#   bash --norc --noprofile -c "$(cat watchdog.bash)" execgate-watchdog COOKIE_NAME
trap '' INT HUP TERM QUIT PIPE
cookie=$1
# SCHED_BATCH: a write waking the watchdog does not preempt the gateway (on a busy machine that
# preemption cost each run a fraction of a millisecond); its sweep still gets a normal share.
chrt -b -p 0 $$ >/dev/null 2>&1
if command -v awk >/dev/null; then
  # awk reads the pipe in blocks, where bash's `read` takes a system call per byte.
  ids=$(awk '$1 == "+" { runs[$2] = 1 } $1 == "-" { delete runs[$2] } END { for (id in runs) print id }')
else
  declare -A runs
  while IFS=' ' read -r op id; do
    case $op in +) runs[$id]=1 ;; -) unset "runs[$id]" ;; esac
  done
  ids=${!runs[*]}
fi
[ -z "$ids" ] && exit 0
args=()
for id in $ids; do args+=(-e "$cookie=$id"); done
# Rounds go on for a second even when one finds nothing: a process the gateway was starting
# when it died shows the cookie only once it has exec'd (between fork and exec its environ is
# still the gateway's), and bubblewrap arms its parent-death signal only after that.
for _ in 1 2 3 4 5 6 7 8 9 10; do
  pids=()
  while IFS= read -r file; do
    pid=${file#/proc/}; pids+=("${pid%/environ}")
  done < <(grep -lzx "${args[@]}" /proc/[0-9]*/environ 2>/dev/null)
  if [ ${#pids[@]} -gt 0 ]; then
    kill -STOP "${pids[@]}" 2>/dev/null
    kill -KILL "${pids[@]}" 2>/dev/null
  fi
  sleep 0.1
done
