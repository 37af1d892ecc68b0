# Holds idle connections to the supervisor's hand-off socket (bound into every run whose
# connects are handed over) for SECONDS, opening new ones as the supervisor drops old ones.
import socket, sys, time
SECONDS = float(sys.argv[1])
COUNT = int(sys.argv[2]) if len(sys.argv) > 2 else 100
held = []
made = 0
end = time.time() + SECONDS
while time.time() < end:
    while len(held) < COUNT:
        s = socket.socket(socket.AF_UNIX)
        try:
            s.connect('/tmp/.execgate-connect.sock')
        except OSError:
            s.close()
            break
        s.setblocking(False)
        held.append(s)
        made += 1
    for s in list(held):
        try:
            if s.recv(1) == b'':
                raise OSError('closed')
        except BlockingIOError:
            pass
        except OSError:
            s.close()
            held.remove(s)
    time.sleep(0.005)
print('made', made, flush=True)
