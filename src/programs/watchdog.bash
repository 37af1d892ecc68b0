# execgate's watchdog (bash): one per gateway process, in its own session, holding the read end
# of a pipe from the gateway, which writes nothing to it. The gateway appends `+ RUN_ID` to the
# list file when a run starts and `- RUN_ID` when it has settled. When the pipe reaches EOF (the
# gateway is gone, however it died), every process whose environment carries the cookie of a run
# still listed is stopped and killed, the same sweep a timeout ends with. (src/process/watchdog.ts)
#
#   bash --norc --noprofile -c "$(cat watchdog.bash)" execgate-watchdog COOKIE_NAME LIST_FILE
trap '' INT HUP TERM QUIT PIPE
cookie=$1
list=$2
# SCHED_BATCH: its sweep, when it comes, does not preempt whatever else runs; it still gets a
# normal share.
chrt -b -p 0 $$ >/dev/null 2>&1
# Nothing comes through the pipe: this waits, asleep, for its end.
while read -r _; do :; done
if command -v awk >/dev/null; then
  ids=$(awk '$1 == "+" { runs[$2] = 1 } $1 == "-" { delete runs[$2] } END { for (id in runs) print id }' "$list" 2>/dev/null)
else
  declare -A runs
  while IFS=' ' read -r op id; do
    case $op in +) runs[$id]=1 ;; -) unset "runs[$id]" ;; esac
  done < "$list"
  ids=${!runs[*]}
fi
rm -rf -- "${list%/*}"
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
