# execgate's connect supervisor (Python 3, standard library only): answers the connect(2) calls of
# sandboxed runs with raw TCP destinations (src/egress/tcp-notify.ts starts it, one per egress
# proxy; src/programs/tcp-install.py installs each run's filter and hands its listener here).
#
# A connect to one of the run's named destinations (127.77.X.Y:PORT, a host service's
# 127.0.0.1:PORT or [::1]:PORT) is decided by the gateway exactly as its relay decides, then
# answered here with a socket of this process, outside the sandbox, already connected to the
# decided address (SECCOMP_IOCTL_NOTIF_ADDFD puts it at the run's descriptor number; the call
# returns 0): the run's bytes then go through the kernel alone. Any other connect goes on as
# made (SECCOMP_USER_NOTIF_FLAG_CONTINUE), which is safe whatever the run does to its memory
# meanwhile: it can only reach what the run's network namespace reaches (its loopback, where the
# gateway's relay decides again). A decided connect is never continued: the socket handed over is
# connected to what was decided from the address read here, so changing the address after it was
# read changes nothing.
#
# Where this process cannot take the run's socket (another process's descriptors need ptrace
# rights, which a hardened host may withhold) the connect goes on as made, to the relay; so too a
# connect on a socket that listens or is bound to a local address (a socket handed over would
# replace it). Every notification received is answered, whatever the run put in the call (an
# address it cannot read itself, a pointer no file offset can name): the kernel then answers it.
#
# Each run's first program hands its filter's listener over the one socket this process listens
# on (argv[1], bound into every run with raw TCP), with the run's token (256 random bits the
# gateway put on that program's argv, seen by no other run; the program sends the first half and
# this process proves itself with the second): the first listener that comes with a run's token
# is that run's, and the token is spent. A connection that sends nothing, or anything
# else, is dropped; none of them can hold this process up.
#
#   python3 -I -S tcp-supervisor.py SOCKET
#
# Lines on stdin (JSON), from the gateway:
#   {"op":"run","run":R,"token":T,"intercept":[[ADDRESS,PORT],...]}  expect R's listener with T
#   {"op":"end","run":R}                                           R ended: its connects go on as made
#   {"op":"decided","seq":N,"action":"dial","host":H,"port":P,"timeout":MS}
#   {"op":"decided","seq":N,"action":"refuse"} | {"op":"decided","seq":N,"action":"continue"}
# Lines on stdout (JSON), to the gateway:
#   {"op":"listening","run":R}
#   {"op":"connect","run":R,"seq":N,"address":A,"port":P,"family":4|6}
#   {"op":"dialed","seq":N,"ok":true} | {"op":"dialed","seq":N,"ok":false,"code":ERRNO}
import ctypes
import errno
import fcntl
import ipaddress
import json
import os
import select
import socket
import struct
import sys
import threading
import time

# <linux/seccomp.h>: _IOWR('!', 0, struct seccomp_notif) and friends.
NOTIF_RECV = 0xC0502100
NOTIF_SEND = 0xC0182101
NOTIF_ID_VALID = 0x40082102
NOTIF_ADDFD = 0x40182103
FLAG_CONTINUE = 1
ADDFD_FLAG_SETFD = 1
NOTIF = struct.Struct('=QIIiIQ6Q')
RESP = struct.Struct('=QqiI')
ADDFD = struct.Struct('=QIIII')
SYS_PIDFD_GETFD = 438
PIDFD_THREAD = os.O_EXCL
O_CLOEXEC = 0o2000000
# Dials in flight at once (each a thread while it connects): beyond this a connect goes on as
# made, to the relay, so that a run opening connections to a destination that never answers
# cannot make this process start threads without end.
MAX_DIALS = 128

libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long

out_lock = threading.Lock()
state_lock = threading.Lock()


def emit(message):
    line = json.dumps(message) + '\n'
    with out_lock:
        try:
            sys.stdout.write(line)
            sys.stdout.flush()
        except (BrokenPipeError, ValueError):
            os._exit(0)  # the gateway is gone; so are this process's runs' answers


class Run:
    def __init__(self, run_id, token, intercept):
        self.id = run_id
        self.token = token
        self.intercept = intercept
        self.listener = None
        self.ended = False
        self.proof = b""


runs = {}          # run id -> Run
tokens = {}        # a run's token, until its listener came -> Run
by_fd = {}         # a descriptor polled -> ('listener', Run) | ('handoff', Handoff)
pending = {}       # seq -> (listener, notification id, target descriptor, the run's socket (a copy), family)
seq_counter = [0]
dials = threading.BoundedSemaphore(MAX_DIALS)
poller = select.poll()


def respond(listener, notif_id, val=0, error=0, flags=0):
    try:
        fcntl.ioctl(listener, NOTIF_SEND, RESP.pack(notif_id, val, error, flags))
    except OSError:
        pass  # the caller is gone (killed meanwhile): nothing waits for the answer


def go_on(listener, notif_id):
    respond(listener, notif_id, flags=FLAG_CONTINUE)


def id_valid(listener, notif_id):
    try:
        fcntl.ioctl(listener, NOTIF_ID_VALID, struct.pack('=Q', notif_id))
        return True
    except OSError:
        return False


class Iovec(ctypes.Structure):
    _fields_ = [('base', ctypes.c_void_p), ('len', ctypes.c_size_t)]


libc.process_vm_readv.restype = ctypes.c_ssize_t
libc.process_vm_readv.argtypes = [ctypes.c_int, ctypes.POINTER(Iovec), ctypes.c_ulong, ctypes.POINTER(Iovec), ctypes.c_ulong, ctypes.c_ulong]


def read_address(pid, pointer, length, listener, notif_id):
    """The socket address the call names: (family, address text, port), or None to let it go on."""
    if length < 16 or length > 128:
        return None
    # process_vm_readv, not /proc/PID/mem: it reads only what the caller itself could read (a
    # page it made unreadable gives EFAULT, as the kernel's own copy would; /proc/PID/mem reads
    # through the protection) and it takes any pointer (an address past 2^63 is no file offset).
    data = ctypes.create_string_buffer(length)
    local = Iovec(ctypes.cast(data, ctypes.c_void_p), length)
    remote = Iovec(pointer, length)
    got = libc.process_vm_readv(pid, ctypes.byref(local), 1, ctypes.byref(remote), 1, 0)
    # The pid could name another process by now: the notification still pending after the read
    # proves that what was read is the caller's.
    if got != length or not id_valid(listener, notif_id):
        return None
    data = data.raw
    family = struct.unpack_from('=H', data, 0)[0]
    if family == socket.AF_INET:
        port = struct.unpack_from('>H', data, 2)[0]
        return (4, socket.inet_ntop(socket.AF_INET, data[4:8]), port)
    if family == socket.AF_INET6 and len(data) >= 28:
        port = struct.unpack_from('>H', data, 2)[0]
        address = ipaddress.IPv6Address(data[8:24])
        if address.ipv4_mapped is not None:
            return (6, str(address.ipv4_mapped), port)
        return (6, str(address), port)
    return None


def take_socket(pid, target, listener, notif_id):
    """A copy of the caller's descriptor `target` if it is a TCP socket not yet connected; else None."""
    # The notification names the calling thread: a thread's own pidfd (PIDFD_THREAD, Linux 6.9)
    # where the kernel has it, else its process's (whose descriptors the thread shares, unless
    # it made a table of its own: then the copy is only used for its kind and flags).
    try:
        pidfd = os.pidfd_open(pid, PIDFD_THREAD)
    except OSError as error:
        if error.errno != errno.EINVAL:
            return None
        try:
            pidfd = os.pidfd_open(thread_group(pid))
        except (OSError, ValueError):
            return None
    try:
        if not id_valid(listener, notif_id):
            return None
        copy = libc.syscall(SYS_PIDFD_GETFD, pidfd, target, 0)
        if copy < 0:
            return None
    finally:
        os.close(pidfd)
    try:
        sock = socket.socket(fileno=copy)
    except OSError:
        os.close(copy)
        return None
    if sock.type != socket.SOCK_STREAM or sock.family not in (socket.AF_INET, socket.AF_INET6) or sock.proto not in (0, socket.IPPROTO_TCP):
        sock.detach()
        os.close(copy)
        return None
    return sock


def thread_group(tid):
    with open('/proc/%d/status' % tid) as handle:
        for line in handle:
            if line.startswith('Tgid:'):
                return int(line.split()[1])
    raise ValueError('no Tgid')


def fd_cloexec(pid, target):
    try:
        with open('/proc/%d/fdinfo/%d' % (pid, target)) as handle:
            for line in handle:
                if line.startswith('flags:'):
                    return int(line.split()[1], 8) & O_CLOEXEC != 0
    except (OSError, ValueError):
        pass
    return False


def on_notification(run, listener):
    buffer = bytearray(NOTIF.size)
    try:
        fcntl.ioctl(listener, NOTIF_RECV, buffer, True)
    except OSError:
        return  # the caller went away before it was read
    notif_id, pid, _flags, _nr, _arch, _ip, fd, pointer, length, _a3, _a4, _a5 = NOTIF.unpack(buffer)
    # A notification received is always answered: whatever fails here lets the call go on as made
    # (the kernel then answers it, as it would without the filter), never leaves it waiting.
    try:
        answer(run, listener, notif_id, pid, fd & 0xFFFFFFFF, pointer, length)
    except Exception:  # pylint: disable=broad-except
        go_on(listener, notif_id)


def answer(run, listener, notif_id, pid, fd, pointer, length):
    if run.ended:
        go_on(listener, notif_id)
        return
    target = read_address(pid, pointer, length, listener, notif_id)
    if target is None or (target[1], target[2]) not in run.intercept:
        go_on(listener, notif_id)
        return
    sock = take_socket(pid, fd, listener, notif_id)
    if sock is None:
        go_on(listener, notif_id)
        return
    try:
        sock.getpeername()
        # Connected already (a client asking again after a connect that returned at once): as the
        # kernel would answer.
        sock.close()
        respond(listener, notif_id, 0, -errno.EISCONN)
        return
    except OSError:
        pass
    # A listening socket, or one bound to a local address: the kernel's answer (EISCONN) or the
    # relay (which keeps the bound address); a socket handed over would replace it.
    local = sock.getsockname()
    if sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN) or local[1] != 0 or local[0] not in ('0.0.0.0', '::'):
        sock.close()
        go_on(listener, notif_id)
        return
    cloexec = fd_cloexec(pid, fd)
    with state_lock:
        seq_counter[0] += 1
        seq = seq_counter[0]
        pending[seq] = (listener, notif_id, fd, sock, cloexec)
    emit({'op': 'connect', 'run': run.id, 'seq': seq, 'address': target[1], 'port': target[2], 'family': 4 if sock.family == socket.AF_INET else 6})


def dial(seq, entry, host, port, timeout):
    listener, notif_id, target, theirs, cloexec = entry
    family = theirs.family
    address = host
    if family == socket.AF_INET6 and ':' not in host:
        address = '::ffff:' + host
    ours = None
    try:
        ours = socket.socket(family, socket.SOCK_STREAM)
        ours.settimeout(timeout / 1000.0)
        ours.connect((address, port))
        # What the run's socket had set that a client relies on: blocking or not, no delay, keepalive.
        ours.setblocking(True)
        for level, name in ((socket.IPPROTO_TCP, socket.TCP_NODELAY), (socket.SOL_SOCKET, socket.SO_KEEPALIVE)):
            try:
                ours.setsockopt(level, name, theirs.getsockopt(level, name))
            except OSError:
                pass
        flags = fcntl.fcntl(theirs.fileno(), fcntl.F_GETFL)
        if flags & os.O_NONBLOCK:
            fcntl.fcntl(ours.fileno(), fcntl.F_SETFL, fcntl.fcntl(ours.fileno(), fcntl.F_GETFL) | os.O_NONBLOCK)
        fcntl.ioctl(listener, NOTIF_ADDFD, ADDFD.pack(notif_id, ADDFD_FLAG_SETFD, ours.fileno(), target, O_CLOEXEC if cloexec else 0))
        respond(listener, notif_id, 0)
        emit({'op': 'dialed', 'seq': seq, 'ok': True})
    except (OSError, ValueError, OverflowError) as error:
        code = getattr(error, 'errno', None) or errno.ECONNREFUSED
        if isinstance(error, socket.timeout) or code == errno.EAGAIN:
            code = errno.ETIMEDOUT
        respond(listener, notif_id, 0, -code)
        emit({'op': 'dialed', 'seq': seq, 'ok': False, 'code': errno.errorcode.get(code, 'error')})
    finally:
        if ours is not None:
            ours.close()
        theirs.close()
        dials.release()


def on_decided(message):
    with state_lock:
        entry = pending.pop(message.get('seq'), None)
    if entry is None:
        return
    listener, notif_id, _target, theirs, _cloexec = entry
    action = message.get('action')
    if action == 'dial' and dials.acquire(blocking=False):
        try:
            threading.Thread(target=dial, args=(message['seq'], entry, str(message['host']), int(message['port']), int(message.get('timeout', 30000))), daemon=True).start()
            return
        except Exception:  # pylint: disable=broad-except
            # No thread to be had (the host's process or memory limit, which a run can exhaust):
            # the call goes on to the relay, and this process goes on serving every other run.
            dials.release()
    theirs.close()
    if action == 'refuse':
        respond(listener, notif_id, 0, -errno.ECONNREFUSED)
    else:
        go_on(listener, notif_id)
        if action == 'dial':
            emit({'op': 'dialed', 'seq': message.get('seq'), 'ok': False, 'code': 'relayed'})


def on_run(message):
    run_id = str(message['run'])
    token = str(message['token'])
    # The first half is the claim the run's first program sends, the second the proof this
    # process answers with: a socket that is not this one (a run that put its own at the path,
    # where the runtime directory is one runs can write) cannot answer it.
    run = Run(run_id, token[:len(token) // 2], {(str(a), int(p)) for a, p in message.get('intercept', [])})
    run.proof = token[len(token) // 2:].encode('ascii')
    runs[run_id] = run
    tokens[run.token] = run
    emit({'op': 'listening', 'run': run_id})


# A connection to the socket has this long to name a live token, and, named, to bring the
# listener. Connections that have named nothing are dropped oldest first past MAX_HANDOFFS, so
# connections a run holds open cannot keep another run's program from being heard: at worst that
# program is dropped before it named its token, and its run starts without the filter (relayed).
HANDOFF_SECONDS = 5
CLAIMED_SECONDS = 30
MAX_HANDOFFS = 256


class Handoff:
    def __init__(self, conn):
        self.conn = conn
        self.deadline = time.monotonic() + HANDOFF_SECONDS
        self.run = None
        self.data = b''


handoffs = {}      # descriptor -> Handoff, oldest first


def on_accept(server):
    """A run's first program (or any process of a run: the socket is in every such run) connected."""
    try:
        conn, _ = server.accept()
    except OSError:
        return
    if len(handoffs) >= MAX_HANDOFFS:
        oldest = next((h for h in handoffs.values() if h.run is None), None)
        if oldest is None:
            conn.close()
            return
        drop_handoff(oldest)
    conn.setblocking(False)
    handoff = Handoff(conn)
    handoffs[conn.fileno()] = handoff
    by_fd[conn.fileno()] = ('handoff', handoff)
    poller.register(conn.fileno(), select.POLLIN)


def drop_handoff(handoff):
    fd = handoff.conn.fileno()
    poller.unregister(fd)
    by_fd.pop(fd, None)
    handoffs.pop(fd, None)
    handoff.conn.close()


def say(conn, word):
    try:
        conn.setblocking(True)
        conn.settimeout(1)
        conn.sendall(word)
        conn.setblocking(False)
        return True
    except OSError:
        return False


def on_handoff(handoff):
    """First the run's claim and a newline (answered T and the proof), then its filter's listener (answered K)."""
    conn = handoff.conn
    if handoff.run is None:
        try:
            chunk = conn.recv(65)
        except BlockingIOError:
            return
        except OSError:
            chunk = b''
        handoff.data += chunk
        if b'\n' not in handoff.data:
            if not chunk or len(handoff.data) > 64:
                drop_handoff(handoff)
            return
        run = tokens.get(handoff.data.split(b'\n', 1)[0].decode('ascii', 'replace'))
        if run is None or run.ended or run.listener is not None:
            drop_handoff(handoff)
            return
        # Spent: the token names one program's hand-off, whatever happens next.
        del tokens[run.token]
        handoff.run = run
        handoff.deadline = time.monotonic() + CLAIMED_SECONDS
        if not say(conn, b'T' + run.proof):
            drop_handoff(handoff)
        return
    try:
        _data, ancillary, _flags, _addr = conn.recvmsg(16, socket.CMSG_SPACE(4 * 4))
    except BlockingIOError:
        return
    except OSError:
        ancillary = []
    fds = []
    try:
        for level, kind, payload in ancillary:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.extend(struct.unpack('=%di' % (len(payload) // 4), payload[:len(payload) - len(payload) % 4]))
        run = handoff.run
        # Only a filter's listener is polled and asked: any other descriptor (an eventfd that is
        # always readable) would have this process spin on it.
        if len(fds) != 1 or run.ended or run.listener is not None or not is_listener(fds[-1]):
            return
        run.listener = fds.pop()
        by_fd[run.listener] = ('listener', run)
        poller.register(run.listener, select.POLLIN)
        say(conn, b'K')
    finally:
        for fd in fds:
            os.close(fd)
        drop_handoff(handoff)


def expire_handoffs():
    now = time.monotonic()
    for handoff in list(handoffs.values()):
        if handoff.deadline < now:
            drop_handoff(handoff)


def is_listener(fd):
    try:
        return os.readlink('/proc/self/fd/%d' % fd) == 'anon_inode:seccomp notify'
    except OSError:
        return False


def drop_listener(run):
    if run.listener is None:
        return
    poller.unregister(run.listener)
    by_fd.pop(run.listener, None)
    os.close(run.listener)
    run.listener = None
    if run.ended:
        runs.pop(run.id, None)


def on_end(message):
    run = runs.get(str(message['run']))
    if run is None:
        return
    run.ended = True
    tokens.pop(run.token, None)
    if run.listener is None:
        runs.pop(run.id, None)


def main():
    path = sys.argv[1]
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM | socket.SOCK_CLOEXEC)
    server.bind(path)
    os.chmod(path, 0o666)
    server.listen(64)
    poller.register(server.fileno(), select.POLLIN)
    stdin = sys.stdin.buffer.raw
    poller.register(stdin.fileno(), select.POLLIN)
    emit({'op': 'ready'})
    buffered = b''
    while True:
        for fd, events in poller.poll(1000):
            if fd == stdin.fileno():
                chunk = os.read(fd, 65536)
                if not chunk:
                    return 0  # the gateway is gone
                buffered += chunk
                while b'\n' in buffered:
                    line, buffered = buffered.split(b'\n', 1)
                    try:
                        message = json.loads(line)
                        op = message.get('op')
                        if op == 'run':
                            on_run(message)
                        elif op == 'end':
                            on_end(message)
                        elif op == 'decided':
                            on_decided(message)
                    except Exception:  # pylint: disable=broad-except
                        pass
                continue
            # Nothing a run sends may end this process (every run's connects would then fail):
            # what cannot be handled is let go on, or dropped.
            try:
                if fd == server.fileno():
                    on_accept(server)
                    continue
                kind, entry = by_fd.get(fd, (None, None))
                if kind == 'handoff':
                    on_handoff(entry)
                elif kind == 'listener':
                    if events & select.POLLIN:
                        on_notification(entry, fd)
                    elif events & (select.POLLHUP | select.POLLERR | select.POLLNVAL):
                        drop_listener(entry)  # every process under the filter has exited
            except Exception:  # pylint: disable=broad-except
                pass
        expire_handoffs()


if __name__ == '__main__':
    sys.exit(main())
