# execgate's sandbox gate for a run on a terminal (bash): as gate.sh, with the terminal as its only
# channel. Echo is off while it waits, so the gateway's `g` never shows; it is back on (as a new
# terminal has it) before the program starts. (src/process/bwrap/gate.ts)
#
#   bash -c "$(cat pty-gate.bash)" execgate-gate PROGRAM [ARG...]
#
# On the terminal: NUL once waiting; SOH as the program starts.
stty -echo 2>/dev/null
printf '\000'
IFS= read -r -n 1 g || exit 125
stty echo 2>/dev/null
[[ $g == g ]] || exit 125
printf '\001'
exec "$@"
