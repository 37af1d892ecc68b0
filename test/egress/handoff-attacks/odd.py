# Connects the kernel refuses, or that name nothing, made through the raw system call: each must
# be answered (none may wait for ever) as the kernel would answer it, and nothing unnamed reached.
import ctypes, errno, mmap, os, socket, struct, sys
ECHO, SECRET, HS = (int(a) for a in sys.argv[1:4])
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
NR_CONNECT = 42 if os.uname().machine == 'x86_64' else 203


def sin(addr, port, family=socket.AF_INET):
    return struct.pack('=H', family) + struct.pack('>H', port) + socket.inet_aton(addr) + b'\0' * 8


def sin6(addr, port):
    return struct.pack('=H', socket.AF_INET6) + struct.pack('>HI', port, 0) + socket.inet_pton(socket.AF_INET6, addr) + b'\0' * 4


def call(fd, pointer, length):
    ctypes.set_errno(0)
    r = libc.syscall(ctypes.c_long(NR_CONNECT), ctypes.c_long(fd), ctypes.c_void_p(pointer), ctypes.c_long(length))
    return 'ok' if r == 0 else errno.errorcode.get(ctypes.get_errno(), str(ctypes.get_errno()))


def peer(s):
    try:
        return '%s:%d' % s.getpeername()[:2]
    except OSError:
        return '-'


def one(name, family, kind, data, length=None, prepare=None):
    s = socket.socket(family, kind)
    if prepare:
        prepare(s)
    buf = ctypes.create_string_buffer(data, max(len(data), 1))
    print(name, call(s.fileno(), ctypes.addressof(buf), len(data) if length is None else length), peer(s), flush=True)
    s.close()


one('v4-secret', socket.AF_INET, socket.SOCK_STREAM, sin('127.0.0.1', SECRET))
one('v4-secret-on-named-address', socket.AF_INET, socket.SOCK_STREAM, sin('127.77.0.1', SECRET))
one('v4-any-secret', socket.AF_INET, socket.SOCK_STREAM, sin('0.0.0.0', SECRET))
one('v6-mapped-secret', socket.AF_INET6, socket.SOCK_STREAM, sin6('::ffff:127.0.0.1', SECRET))
one('v6-loopback-secret', socket.AF_INET6, socket.SOCK_STREAM, sin6('::1', SECRET))
one('v4-on-v6-secret', socket.AF_INET6, socket.SOCK_STREAM, sin('127.0.0.1', SECRET) + b'\0' * 12)
one('v6-on-v4-secret', socket.AF_INET, socket.SOCK_STREAM, sin6('::ffff:127.0.0.1', SECRET))
one('addrlen-15', socket.AF_INET, socket.SOCK_STREAM, sin('127.0.0.1', HS), 15)
one('addrlen-4096', socket.AF_INET, socket.SOCK_STREAM, sin('127.0.0.1', HS) + b'\xff' * 4080)
one('addrlen-high-bits', socket.AF_INET, socket.SOCK_STREAM, sin('127.0.0.1', HS), (1 << 32) | 16)
one('udp-named', socket.AF_INET, socket.SOCK_DGRAM, sin('127.77.0.1', ECHO))
one('unix', socket.AF_UNIX, socket.SOCK_STREAM, struct.pack('=H', socket.AF_UNIX) + b'/nonexistent\0\0')
one('listening', socket.AF_INET, socket.SOCK_STREAM, sin('127.77.0.1', ECHO), prepare=lambda s: (s.bind(('127.0.0.1', 0)), s.listen()))
one('bound', socket.AF_INET, socket.SOCK_STREAM, sin('127.77.0.1', ECHO), prepare=lambda s: s.bind(('127.0.0.1', 0)))
for name, pointer in (('null', 0), ('unmapped', 0xdead0000), ('kernel-pointer', 0xffffffff81000000), ('non-canonical', 0x8000000000000000)):
    s = socket.socket()
    print(name, call(s.fileno(), pointer, 16), peer(s), flush=True)
    s.close()
# A page the caller cannot read: the kernel would answer EFAULT, so must the hand-off.
page = mmap.mmap(-1, 4096)
page.write(sin('127.0.0.1', HS))
where = ctypes.addressof(ctypes.c_char.from_buffer(page))
libc.mprotect(ctypes.c_void_p(where), 4096, 0)
s = socket.socket()
print('unreadable-page', call(s.fileno(), where, 16), peer(s), flush=True)
s.close()
named = ctypes.create_string_buffer(sin('127.77.0.1', ECHO), 16)
print('closed-fd', call(999, ctypes.addressof(named), 16), flush=True)
r, w = os.pipe()
print('pipe-fd', call(r, ctypes.addressof(named), 16), flush=True)
s = socket.create_connection(('127.0.0.1', HS))
print('connected', call(s.fileno(), ctypes.addressof(named), 16), flush=True)
s.close()
s = socket.create_connection(('echo.test', ECHO), timeout=10)
print('after', peer(s), flush=True)
