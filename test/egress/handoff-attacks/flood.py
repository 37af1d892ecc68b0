# One run's load on the supervisor: processes whose connects are cut short (killed while the
# call waits, exiting with connects of other threads still waiting), then THREADS threads that
# connect at once, several times each. Every call must come back.
import os, signal, socket, sys, threading, time
ECHO, THREADS, ROUNDS, KILLS = (int(a) for a in sys.argv[1:5])
killed = 0
for i in range(KILLS):
    pid = os.fork()
    if pid == 0:
        for _ in range(4):
            threading.Thread(target=lambda: socket.create_connection(('echo.test', ECHO)), daemon=True).start()
        try:
            socket.create_connection(('echo.test', ECHO))
        except OSError:
            pass
        os._exit(0)
    if i % 2 == 0:
        os.kill(pid, signal.SIGKILL)
        killed += 1
    os.waitpid(pid, 0)
counts = {}
lock = threading.Lock()
go = threading.Event()


def worker():
    go.wait()
    for _ in range(ROUNDS):
        try:
            s = socket.create_connection(('echo.test', ECHO), timeout=60)
            kind = 'handed' if s.getpeername()[0] == '127.0.0.1' else 'relayed'
            s.close()
        except OSError as e:
            kind = type(e).__name__
        with lock:
            counts[kind] = counts.get(kind, 0) + 1


threading.stack_size(256 * 1024)
threads = [threading.Thread(target=worker) for _ in range(THREADS)]
for t in threads:
    t.start()
go.set()
for t in threads:
    t.join()
print('killed', killed, 'calls', sum(counts.values()), ' '.join('%s=%d' % kv for kv in sorted(counts.items())), flush=True)
