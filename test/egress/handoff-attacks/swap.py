# The descriptor a connect names swapped by another thread while the call waits: a UDP socket, a
# pipe, a listening socket, a connected one, a fresh TCP socket, nothing. Whatever the
# supervisor takes, only the named destination (handed over or relayed) may be reached.
import ctypes, os, socket, struct, sys, threading
ECHO, SECRET, COUNT = (int(a) for a in sys.argv[1:4])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR_CONNECT = 42 if os.uname().machine == 'x86_64' else 203
FD = 200
named = ctypes.create_string_buffer(struct.pack('=H', socket.AF_INET) + struct.pack('>H', ECHO) + socket.inet_aton('127.77.0.1') + b'\0' * 8, 16)
listening = socket.socket()
listening.bind(('127.0.0.1', 0))
listening.listen()
connected = socket.create_connection(('127.0.0.1', listening.getsockname()[1]))
udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
r, w = os.pipe()
others = [udp.fileno(), r, listening.fileno(), connected.fileno()]
stop = False


def swapper():
    i = 0
    while not stop:
        i += 1
        if i % 6 == 5:
            try:
                os.close(FD)
            except OSError:
                pass
        elif i % 6 == 4:
            s = socket.socket()
            os.dup2(s.fileno(), FD)
            s.close()
        else:
            os.dup2(others[i % 4], FD)


t = threading.Thread(target=swapper, daemon=True)
t.start()
results = {}
for _ in range(COUNT):
    s = socket.socket()
    os.dup2(s.fileno(), FD)
    s.close()
    ctypes.set_errno(0)
    rc = libc.syscall(ctypes.c_long(NR_CONNECT), ctypes.c_long(FD), named, ctypes.c_long(16))
    key = 'ok' if rc == 0 else 'err'
    if rc == 0:
        key = 'ok-gone'
        try:
            copy = os.dup(FD)
        except OSError:
            copy = -1
        sock = None
        if copy >= 0:
            try:
                sock = socket.socket(fileno=copy)
            except OSError:
                os.close(copy)
        if sock is not None:
            try:
                peer = sock.getpeername()
                # The swapper may have put its connected socket there again since: the run's own.
                key = 'named' if peer[1] == ECHO else 'own' if peer == connected.getpeername() else 'peer:%s:%d' % peer[:2]
            except OSError:
                pass
            finally:
                sock.close()
    results[key] = results.get(key, 0) + 1
stop = True
t.join()
print(' '.join('%s=%d' % kv for kv in sorted(results.items())), flush=True)
