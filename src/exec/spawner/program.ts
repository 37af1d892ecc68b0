/*
 * The spawn helper's program. It runs as `node -` with this text on its stdin (so nothing
 * needs to exist on disk next to the compiled file) and an IPC channel to the gateway.
 *
 * Per request it opens a connection per stdio stream to the gateway's private socket, sends the
 * run's token and the stream number as the first bytes, and once the kernel has them, spawns the
 * command with the connected sockets as its stdio, then closes its own copies (close(2), never
 * shutdown(2), which would end the stream for the child too). Output therefore flows from the
 * child straight to the gateway; this process only reports the pid and the exit over IPC.
 * The command's environment arrives over IPC; this process's own environment holds nothing
 * but the socket path. It exits when the gateway disconnects.
 */
export const HELPER_PROGRAM = String.raw`'use strict';
process.title = 'execgate-spawner';
const { spawn } = require('node:child_process');
const { connect } = require('node:net');
const socketPath = process.env.EXECGATE_SPAWNER_SOCKET;
delete process.env.EXECGATE_SPAWNER_SOCKET;

function send(message) {
  if (process.connected) process.send(message);
}

function open(token, stream) {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    socket.pause();
    socket.once('error', reject);
    socket.write(token + stream, (error) => (error ? reject(error) : resolve(socket)));
  });
}

async function run(request) {
  const { id, token } = request;
  let sockets = [];
  let child;
  try {
    const opening = [open(token, '1'), open(token, '2')];
    if (request.stdin) opening.unshift(open(token, '0'));
    const settled = await Promise.allSettled(opening);
    sockets = settled.filter((s) => s.status === 'fulfilled').map((s) => s.value);
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    child = spawn(request.shell, request.args, {
      cwd: request.cwd,
      env: request.env,
      detached: true,
      stdio: request.stdin ? sockets : ['ignore', ...sockets],
    });
  } catch (error) {
    send({ t: 'failed', id, code: (error && error.code) || 'unknown', message: String((error && error.message) || error) });
    return;
  } finally {
    for (const socket of sockets) socket.destroy();
  }
  if (child.pid === undefined) {
    child.once('error', (error) => send({ t: 'failed', id, code: error.code || 'unknown', message: error.message }));
    return;
  }
  child.on('error', () => { /* after a pid, only kill() reports errors; none are sent here */ });
  child.once('exit', (code, signal) => send({ t: 'exit', id, code, signal }));
  send({ t: 'spawned', id, pid: child.pid });
}

process.on('message', (message) => {
  if (message && message.t === 'spawn') void run(message);
});
process.on('disconnect', () => process.exit(0));
send({ t: 'ready' });
`;
