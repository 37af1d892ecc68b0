# execgate's connect hand-off (Python 3, standard library only): the first program of a sandboxed
# run with raw TCP destinations (src/egress/tcp-notify.ts). Inside the sandbox, before anything of
# the run has started, it installs a second seccomp filter (scripts/generate-seccomp.py,
# connect-notify) that hands every connect(2) to the gateway's supervisor
# (src/programs/tcp-supervisor.py), gives the supervisor the filter's listener with the run's
# token through the supervisor's socket, waits for its word, and becomes the run's program. The
# supervisor then answers a connect to one of the run's named destinations with a socket already
# connected to it, so the run's bytes go through the kernel alone; every other connect goes on as
# made.
#
#   python3 -I -S -c "$(cat tcp-install.py)" SOCKET BPF_HEX TOKEN PROGRAM [ARG...]
#     SOCKET   the supervisor's socket (bound read-only into the sandbox)
#     BPF_HEX  the filter (struct sock_filter[]), in hex
#     TOKEN    the run's token: its first half is sent, the supervisor answers with the second;
#              it takes one listener with it, this one
#
# Where the filter cannot be had (a kernel without listeners, no socket), the program starts
# without it and the run's connections take the gateway's relay on its loopback, as they would
# anyway: nothing is reached that the relay would not reach. Once the filter is in place the
# hand-off must succeed (a filter whose listener nobody holds answers every connect ENOSYS): if it
# does not, the run does not start (exit 125, one line on stderr).
#
# It runs before every such run, so it imports only C modules (a Python start with `socket` and
# `signal` costs several milliseconds more).
import _signal
import _socket
import ctypes
import os
import struct
import sys

SECCOMP_SET_MODE_FILTER = 1
SECCOMP_FILTER_FLAG_NEW_LISTENER = 1 << 3
PR_SET_NO_NEW_PRIVS = 38
SYS_SECCOMP = {'x86_64': 317, 'aarch64': 277}


class SockFprog(ctypes.Structure):
    _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]


def install(program):
    nr = SYS_SECCOMP.get(os.uname().machine)
    if nr is None or len(program) == 0 or len(program) % 8 != 0:
        return -1
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    if libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return -1
    buffer = ctypes.create_string_buffer(program, len(program))
    fprog = SockFprog(len(program) // 8, ctypes.cast(buffer, ctypes.c_void_p))
    return libc.syscall(nr, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER, ctypes.byref(fprog))


def main():
    if len(sys.argv) < 5:
        sys.stderr.write('execgate: the connect hand-off was started without a program\n')
        return 125
    path, program_hex, token, argv = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    # Connected before the filter exists: this connect is not one to hand over. The token first:
    # only once the supervisor has taken it (T) is the filter installed, so a supervisor that is
    # gone or busy leaves the run relayed, never under a filter nobody answers.
    try:
        channel = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM | _socket.SOCK_CLOEXEC)
        channel.settimeout(10)
        channel.connect(path)
        claim, proof = token[:len(token) // 2], token[len(token) // 2:]
        channel.sendall(claim.encode('ascii') + b'\n')
        answer = b''
        while len(answer) < 1 + len(proof):
            chunk = channel.recv(1 + len(proof) - len(answer))
            if not chunk:
                break
            answer += chunk
        # Only the gateway's supervisor knows the second half: a socket a run put at the path
        # gets neither the listener nor the run's connections.
        if answer != b'T' + proof.encode('ascii'):
            raise OSError('not taken')
    except OSError:
        channel = None
    if channel is not None:
        listener = install(bytes.fromhex(program_hex))
        try:
            if listener < 0:
                raise OSError('no filter could be installed')
            channel.sendmsg([b'L'], [(_socket.SOL_SOCKET, _socket.SCM_RIGHTS, struct.pack('=i', listener))])
            os.close(listener)
            if channel.recv(1) != b'K':
                raise OSError('the supervisor did not take it')
        except OSError as error:
            if listener >= 0:
                sys.stderr.write('execgate: the run could not hand its connections to the gateway (%s)\n' % error)
                return 125
        channel.close()
    # The program gets what this process was given, not what Python made of it: the environment
    # as it came (Python may have set LC_CTYPE for itself, PEP 538), and SIGPIPE and SIGXFSZ at
    # their defaults (Python ignores them, and an ignored signal stays ignored across exec).
    with open('/proc/self/environ', 'rb') as handle:
        environ = dict(entry.split(b'=', 1) for entry in handle.read().split(b'\0') if b'=' in entry)
    _signal.signal(_signal.SIGPIPE, _signal.SIG_DFL)
    _signal.signal(_signal.SIGXFSZ, _signal.SIG_DFL)
    try:
        os.execvpe(argv[0], argv, environ)
    except OSError as error:
        sys.stderr.write('execgate: %s: %s\n' % (argv[0], error.strerror))
        return 127


sys.exit(main())
