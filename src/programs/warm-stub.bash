# execgate's warm sandbox (bash): a sandbox set up ahead of the request that will use it
# (src/process/bwrap/warm.ts). It says it is waiting, then reads one frame on stdin with everything
# about the run: the working directory, what becomes of stdin, the program's argv and its whole
# environment (resolved values included, never on an argv). The gateway checks the sandbox's
# mounts against the plan (src/process/bwrap/verify.ts) before it sends the frame, once the
# sandbox is set up, and again before it sends the byte after SOH that lets the program start.
#
# Frame: a header line `A E L1 L2 ...` (fields in the argv part, fields in the environment part,
# then each field's length in bytes), then the fields back to back. The argv part is CWD, STDIN
# (`keep`, or anything else for /dev/null), then the program and its arguments. With no
# environment of its own this bash reads in the C locale, where `read -N` and `${b:o:n}` count
# bytes, and `read -N` takes the whole body in one read(2).
#
# `exec` lowers SHLVL by one and exports it: the gateway sends SHLVL one higher, and where the
# run has none an array SHLVL (which bash cannot export) keeps it out.
#
# On stderr: NUL once waiting; SOH once ready to start, or STX, a reason and a newline when
# the run cannot start (exit 125). After SOH it waits for one more byte on stdin: the gateway
# sends it once it has read the SOH, so that the program's first output does not find stderr
# already marked readable (the gateway would then read its stderr first, whatever came first).
printf '\000' >&2
unset -v OLDPWD SHLVL
IFS=' ' read -r -a l || exit 125
[[ "${l[*]}" =~ ^[0-9]+( [0-9]+)+$ ]] || exit 125
t=0; for x in "${l[@]:2}"; do t=$((t+x)); done
IFS= read -r -N "$t" b; (( ${#b} == t )) || exit 125
a=(); e=(); o=0; i=0
for x in "${l[@]:2}"; do if (( i < l[0] )); then a+=("${b:o:x}"); else e+=("${b:o:x}"); fi; o=$((o+x)); i=$((i+1)); done
(( ${#a[@]} == l[0] && ${#e[@]} == l[1] && l[0] > 2 )) || exit 125
unset -v l t b o i x
cd -P -- "${a[0]}" 2>/dev/null || { printf '\002cwd\n' >&2; exit 125; }
(( ${#e[@]} == 0 )) || export -- "${e[@]}" 2>/dev/null || exit 125
export PWD="${a[0]}"
[[ -v SHLVL ]] || declare -a SHLVL
printf '\001' >&2
IFS= read -r -N 1 x || exit 125
unset -v x
[[ ${a[1]} == keep ]] || exec </dev/null
exec -- "${a[@]:2}"
