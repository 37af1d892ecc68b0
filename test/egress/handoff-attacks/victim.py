# Another run's connects while the flood runs: each handed over, each answered.
import socket, sys
ECHO, COUNT = int(sys.argv[1]), int(sys.argv[2])
counts = {}
for _ in range(COUNT):
    try:
        s = socket.create_connection(('echo.test', ECHO), timeout=30)
        kind = 'handed' if s.getpeername()[0] == '127.0.0.1' else 'relayed'
        s.sendall(b'v\n')
        if s.recv(10) != b'echo:v\n':
            kind = 'bad-echo'
        s.close()
    except OSError as e:
        kind = type(e).__name__
    counts[kind] = counts.get(kind, 0) + 1
print(' '.join('%s=%d' % kv for kv in sorted(counts.items())), flush=True)
