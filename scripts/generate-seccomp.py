#!/usr/bin/python3
"""
Generate the seccomp filter every sandboxed run starts under (bubblewrap `--seccomp FD`).

Built with libseccomp's own Python bindings (Debian: python3-seccomp), the maintained tool
that Docker, podman and systemd use: it knows each architecture's system call numbers, the
32-bit and x32 ABIs a 64-bit process can still enter the kernel through, and how to lay out the
BPF program. The output is the raw program bubblewrap reads (an array of `struct sock_filter`),
one file per architecture, committed under src/programs/seccomp/ so that installing execgate
needs neither libseccomp nor Python; test/sandbox/seccomp.test.ts regenerates them and checks
they are the same bytes, so the list below is the one place the filter is written.

    /usr/bin/python3 scripts/generate-seccomp.py [OUT_DIR]

The list: what Docker's default profile refuses and an agent's command never needs, kept as a
deny list (default allow) so that real work keeps working. Each group says why.
"""
import errno
import os
import sys

import seccomp

DENIED = {
    # The kernel keyring is not namespaced: a run could read or link keys of the user's session
    # keyring (a keyring-backed secret store among them).
    'keyring': ['keyctl', 'add_key', 'request_key'],
    # Large kernel attack surface and kernel-wide observation, never needed for ordinary work.
    'kernel surface': ['bpf', 'perf_event_open', 'userfaultfd', 'io_uring_setup', 'io_uring_enter', 'io_uring_register',
                       'lookup_dcookie', 'syslog', 'vm86', 'vm86old', 'iopl', 'ioperm', 'uselib', 'ustat', 'sysfs', '_sysctl',
                       'nfsservctl', 'quotactl'],
    # Loading or replacing kernel code.
    'kernel code': ['kexec_load', 'kexec_file_load', 'init_module', 'finit_module', 'delete_module', 'create_module',
                    'query_module', 'get_kernel_syms'],
    # Changing the mount table: the sandbox's hidden paths are mounts. Without capabilities these
    # fail anyway; refused here too, so that nothing depends on capabilities alone.
    'mounts': ['mount', 'umount', 'umount2', 'pivot_root', 'move_mount', 'open_tree', 'fsopen', 'fsconfig', 'fsmount',
               'fspick', 'mount_setattr'],
    # New or other namespaces: a nested user namespace hands a full capability set back.
    'namespaces': ['unshare', 'setns'],
    # File handles open a file by inode number, past every mount that hides it.
    'file handles': ['open_by_handle_at', 'name_to_handle_at'],
    # Host-wide state: accounting, swap, the clock, reboot.
    'host state': ['acct', 'swapon', 'swapoff', 'reboot', 'settimeofday', 'stime', 'clock_settime', 'clock_adjtime',
                   'adjtimex'],
}

# clone(2) with a CLONE_NEW* flag makes a namespace as unshare(2) does (arg 0 holds the flags on
# every architecture generated here). clone3(2) takes its flags in memory, which a filter cannot
# read: it is answered ENOSYS, and the C libraries then fall back to clone(2).
CLONE_NEW = {
    'CLONE_NEWTIME': 0x00000080,
    'CLONE_NEWNS': 0x00020000,
    'CLONE_NEWCGROUP': 0x02000000,
    'CLONE_NEWUTS': 0x04000000,
    'CLONE_NEWIPC': 0x08000000,
    'CLONE_NEWUSER': 0x10000000,
    'CLONE_NEWPID': 0x20000000,
    'CLONE_NEWNET': 0x40000000,
}

# ioctl(2) requests that push input into a terminal (TIOCSTI) or drive the console (TIOCLINUX):
# a run on a PTY could otherwise type commands into the terminal that outlives it.
IOCTLS = {'TIOCSTI': 0x5412, 'TIOCLINUX': 0x541C}

# Each filter also covers the compatibility ABIs a 64-bit process can make system calls through
# (int 0x80 on x86_64, x32), with the same rules, rather than leaving them open.
ARCHES = {
    'x86_64': [seccomp.Arch.X86_64, seccomp.Arch.X86, seccomp.Arch.X32],
    'aarch64': [seccomp.Arch.AARCH64, seccomp.Arch.ARM],
}


def build(arches):
    f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    # The bindings give the native token unsigned and the Arch constants signed.
    native = seccomp.system_arch() & 0xFFFFFFFF
    tokens = [arch & 0xFFFFFFFF for arch in arches]
    for arch, token in zip(arches, tokens):
        if token != native:
            f.add_arch(arch)
    if native not in tokens:
        f.remove_arch(seccomp.Arch.NATIVE)
    # A system call made through an ABI the filter does not list is refused outright.
    f.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.KILL_PROCESS)
    for names in DENIED.values():
        for name in names:
            try:
                f.add_rule(seccomp.ERRNO(errno.EPERM), name)
            except (RuntimeError, ValueError):
                pass  # not a system call on every architecture of this filter (vm86 on arm)
    for flag in CLONE_NEW.values():
        f.add_rule(seccomp.ERRNO(errno.EPERM), 'clone', seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    f.add_rule(seccomp.ERRNO(errno.ENOSYS), 'clone3')
    for request in IOCTLS.values():
        f.add_rule(seccomp.ERRNO(errno.EPERM), 'ioctl', seccomp.Arg(1, seccomp.MASKED_EQ, 0xFFFFFFFF, request))
    return f


def build_connect_notify(arches):
    """
    The second filter of a run with raw TCP destinations (src/programs/tcp-install.py installs it
    inside the sandbox, src/programs/tcp-supervisor.py answers it): connect(2) through the native
    ABI is handed to the gateway's supervisor (SECCOMP_RET_USER_NOTIF), which either lets it go on
    as made or answers it with a socket already connected to the decided destination. Everything
    else, and connect(2) through any other ABI, is allowed: that is what it would be without this
    filter (the run's loopback, where the gateway's relay listens), so nothing is lost by missing a
    call. The first filter already refuses the ABIs it does not list.
    """
    f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    native = seccomp.system_arch() & 0xFFFFFFFF
    target = arches[0] & 0xFFFFFFFF
    if target != native:
        f.add_arch(arches[0])
        f.remove_arch(seccomp.Arch.NATIVE)
    f.set_attr(seccomp.Attr.ACT_BADARCH, seccomp.ALLOW)
    f.add_rule(seccomp.NOTIFY, 'connect')
    return f


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), '..', 'src', 'programs', 'seccomp')
    os.makedirs(out, exist_ok=True)
    for name, arches in ARCHES.items():
        for path, made in ((os.path.join(out, name + '.bpf'), build(arches)),
                           (os.path.join(out, 'connect-notify-' + name + '.bpf'), build_connect_notify(arches))):
            with open(path, 'wb') as handle:
                made.export_bpf(handle)
            print(path, os.path.getsize(path), 'bytes')


if __name__ == '__main__':
    main()
