# shellcheck shell=sh
# execgate's sandbox gate (POSIX sh): the first program of every cold sandboxed run on pipes.
# bubblewrap starts it once the sandbox is set up (working directory entered); it says so, waits
# while the gateway checks the sandbox's mounts against the plan (src/process/bwrap/verify.ts), and
# only on the word `go` becomes the run's program. Nothing of the run has started before that
# word, so a sandbox that does not match its plan runs nothing. (src/process/bwrap/gate.ts)
#
#   sh -c "$(cat gate.sh)" execgate-gate STDIN PROGRAM [ARG...]
#     STDIN  `keep`: the program reads the rest of this stdin; otherwise it gets /dev/null
#
# On stderr: NUL once waiting, and nothing else: whatever follows it is the program's own output.
# The gateway sends `go` only once it has read the NUL, checked the sandbox, and polled stderr
# empty again: a program writing at once would otherwise find stderr still marked readable by the
# NUL, and the gateway would read its stderr first whatever came first (src/process/bwrap/gate.ts).
# One round trip: the gate and the gateway each wake once between set-up and the program.
#
# The program's environment is this shell's: the one variable the gate reads into, `g`, is put back
# as it came (its value, or unset) before the exec, so a run may have a `g` of its own. (Kept in the
# positional parameters: any other name would be one more the run could not have.)
set -- "${g-}" "${g+set}" "$@"
printf '\000' >&2
IFS= read -r g || exit 125
[ "$g" = go ] || exit 125
if [ "$2" = set ]; then g=$1; else unset g; fi
shift 2
[ "$1" = keep ] || exec </dev/null
shift
exec "$@"
