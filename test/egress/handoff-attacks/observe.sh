#!/bin/bash
# What a program sees of its process: compared between a run whose connects are handed over and
# one whose connects are relayed (the program must see the same).
echo "umask $(umask)"
echo "cwd $(pwd -P)"
grep -E '^(Sig(Q|Pnd|Blk|Ign|Cgt)|ShdPnd|Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs|Seccomp|Seccomp_filters|Speculation_Store_Bypass|Uid|Gid|Groups|Umask|Cpus_allowed_list):' /proc/self/status
for fd in /proc/self/fd/*; do echo "fd ${fd##*/} $(readlink "$fd" | sed -e 's/[0-9]\{3,\}/N/g' -e 's#execgate-pipes-[^/]*/[0-9]*#execgate-pipes-N/N#' -e 's#^/dev/pts/[0-9]*$#/dev/pts/N#')"; done
sed 's/^/limit /' /proc/self/limits
echo "personality $(cat /proc/self/personality) oom $(cat /proc/self/oom_score_adj)"
echo "parent $(tr '\0\n' '  ' < /proc/$PPID/cmdline | cut -c1-60)"
echo "self $(tr '\0\n' '  ' < /proc/self/cmdline)"
for p in /proc/[0-9]*; do echo "process $(basename "$p") $(tr '\0\n' '  ' < "$p"/cmdline | cut -c1-60)"; done
env -0 | tr '\0' '\n' | grep -Ev '^(EXECGATE_RUN_ID|PWD|OLDPWD|_)=' | sed -e 's#//run-[^@]*@127.0.0.1:[0-9]*#//CREDS#' -e 's/^/env /' | sort
