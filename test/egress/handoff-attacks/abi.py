# Ways around the connect filter: each may at most reach the run's loopback, where the relay
# decides (the peer is then the run's 127.77 address, not the real server's).
import ctypes, errno, os, socket, struct, sys
ECHO, SECRET, HS = (int(a) for a in sys.argv[1:4])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long]
targets = (('named', '127.77.0.1', ECHO), ('secret', '127.0.0.1', SECRET), ('secret-named-address', '127.77.0.1', SECRET))


def sin(addr, port):
    return struct.pack('=H', socket.AF_INET) + struct.pack('>H', port) + socket.inet_aton(addr) + b'\0' * 8


def peer(s):
    try:
        return '%s:%d' % s.getpeername()[:2]
    except OSError:
        return '-'


if os.uname().machine == 'x86_64':
    # int 0x80 from a 64-bit process (the i386 ABI): socketcall(SYS_CONNECT) and connect (362).
    low = libc.mmap(None, 4096, 7, 0x22 | 0x40, -1, 0)  # rwx, MAP_PRIVATE|MAP_ANONYMOUS|MAP_32BIT
    code = bytes.fromhex('53' '89f8' '89f3' '4887ca' 'cd80' '4863c0' '5b' 'c3')  # eax=nr ebx=a ecx=b edx=c; int 0x80
    ctypes.memmove(low, code, len(code))
    int80 = ctypes.CFUNCTYPE(ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_long, ctypes.c_long)(low)
    for name, host, port in targets:
        for how in ('socketcall', 'connect'):
            s = socket.socket()
            ctypes.memmove(low + 256, sin(host, port), 16)
            if how == 'socketcall':
                ctypes.memmove(low + 320, struct.pack('=III', s.fileno(), low + 256, 16), 12)
                r = int80(102, 3, low + 320, 0)
            else:
                r = int80(362, s.fileno(), low + 256, 16)
            print('int80-%s-%s' % (how, name), 'ok' if r == 0 else errno.errorcode.get(-r, str(r)), peer(s), flush=True)
            s.close()
    # x32 (the kernel may not have it: then ENOSYS)
    s = socket.socket()
    b = ctypes.create_string_buffer(sin('127.0.0.1', SECRET), 16)
    r = libc.syscall(ctypes.c_long(0x40000000 | 42), ctypes.c_long(s.fileno()), b, ctypes.c_long(16))
    print('x32-secret', 'ok' if r == 0 else errno.errorcode.get(ctypes.get_errno()), peer(s), flush=True)
for name, host, port in targets:
    s = socket.socket()
    try:
        s.sendto(b'hi\n', socket.MSG_FASTOPEN, (host, port))
        print('fastopen-%s' % name, 'ok', peer(s), flush=True)
    except OSError as e:
        print('fastopen-%s' % name, errno.errorcode.get(e.errno), peer(s), flush=True)
    s.close()
r = libc.syscall(425 if os.uname().machine == 'x86_64' else 425, 8, ctypes.create_string_buffer(120))
print('io_uring', errno.errorcode.get(ctypes.get_errno()) if r < 0 else 'ok', flush=True)


# A filter of the run's own with a listener (which would let the run answer its connects itself).
class Fprog(ctypes.Structure):
    _fields_ = [('len', ctypes.c_ushort), ('filter', ctypes.c_void_p)]


prog = struct.pack('=HBBI', 0x20, 0, 0, 0) + struct.pack('=HBBI', 0x15, 0, 1, 42) + struct.pack('=HBBI', 0x06, 0, 0, 0x7fc00000) + struct.pack('=HBBI', 0x06, 0, 0, 0x7fff0000)
buf = ctypes.create_string_buffer(prog, len(prog))
fd = libc.syscall(317 if os.uname().machine == 'x86_64' else 277, 1, 8, ctypes.byref(Fprog(4, ctypes.cast(buf, ctypes.c_void_p))))
print('own-listener', 'ok' if fd >= 0 else errno.errorcode.get(ctypes.get_errno()), flush=True)
# The hand-off socket (the supervisor's, in every such run): a forged token with a descriptor
# that is no listener is not taken (no answer, the connection closed); no replacement.
s = socket.socket(socket.AF_UNIX)
try:
    s.connect('/tmp/.execgate-connect.sock')
    s.sendmsg([b'0' * 32], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, struct.pack('=i', os.eventfd(1)))])
    s.settimeout(10)
    print('handoff-socket', 'answer:%r' % s.recv(1), flush=True)
except OSError as e:
    print('handoff-socket', errno.errorcode.get(e.errno), flush=True)
for how in ('unlink', 'rename'):
    try:
        os.unlink('/tmp/.execgate-connect.sock') if how == 'unlink' else os.rename('/tmp/.execgate-connect.sock', '/tmp/x')
        print('handoff-socket-%s' % how, 'ok', flush=True)
    except OSError as e:
        print('handoff-socket-%s' % how, errno.errorcode.get(e.errno), flush=True)
s = socket.create_connection(('echo.test', ECHO), timeout=10)
print('after', peer(s), flush=True)
