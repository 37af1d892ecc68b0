# shellcheck shell=sh
# execgate's sandbox gate (POSIX sh): the first program of every cold sandboxed run on pipes.
# bubblewrap starts it once the sandbox is set up (working directory entered); it says so, waits
# while the gateway checks the sandbox's mounts against the plan (src/process/bwrap/verify.ts), and
# only on the word `go` becomes the run's program. Nothing of the run has started before that
# word, so a sandbox that does not match its plan runs nothing. (src/process/bwrap/gate.ts)
#
#   sh -c "$(cat gate.sh)" execgate-gate CLOSING STDIN PROGRAM [ARG...]
#     CLOSING  this gate as a bash that first closes every descriptor above 2 (process/programs.ts)
#     STDIN    `keep`: the program reads the rest of this stdin; otherwise it gets /dev/null
#
# Descriptors: a gateway process that holds one without close-on-exec (`execgate run ... 200<file`,
# a terminal master of a PTY run in progress) hands it down through bubblewrap. This gate looks at
# its own descriptors first and, when it holds any above 2, hands over to CLOSING (sh cannot close
# a descriptor above 9), which closes them and then does what this gate does. So the decision is
# made inside the sandbox on what actually arrived, and the gateway does not read its descriptor
# table before every spawn. (Where /proc/self/fd cannot be listed, CLOSING takes over too.)
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
for g in /proc/self/fd/*; do
  case $g in
    /proc/self/fd/0 | /proc/self/fd/1 | /proc/self/fd/2) ;;
    *)
      # The listing's own descriptor is closed once listed; one still open was inherited.
      if [ "$g" != '/proc/self/fd/*' ] && [ ! -h "$g" ]; then continue; fi
      if [ "$2" = set ]; then g=$1; else unset g; fi
      shift 2
      exec /bin/bash --norc --noprofile -c "$1" "$0" "$@"
      ;;
  esac
done
printf '\000' >&2
IFS= read -r g || exit 125
[ "$g" = go ] || exit 125
if [ "$2" = set ]; then g=$1; else unset g; fi
shift 3
[ "$1" = keep ] || exec </dev/null
shift
exec "$@"
