/*
 * The spawn helper's program (node), started by process/spawner/helper.ts with an IPC channel to the
 * gateway and the gateway's key on its stdin.
 *
 * It keeps a few connections to the gateway's private socket open ahead of need, each introduced
 * by the gateway's key (read from stdin: never in an environment or argv another process could
 * read) and then a random token as its first bytes. Per request it takes two (three with stdin), spawns the
 * command with those connected sockets as its stdio, closes its own copies (close(2), never
 * shutdown(2), which would end the stream for the child too), and tells the gateway the pid and
 * which tokens carry which stream. Output therefore flows from the child straight to the
 * gateway; this process only reports the pid and the exit over IPC. The command's environment
 * arrives over IPC; this process's own environment holds nothing but the socket path. When the
 * gateway disconnects (closed, or died) it removes the socket and exits.
 */
'use strict';
process.title = 'execgate-spawner';
const { spawn } = require('node:child_process');
const { randomBytes } = require('node:crypto');
const fs = require('node:fs');
const { rmdirSync, unlinkSync } = fs;
const { connect } = require('node:net');
const { dirname, join } = require('node:path');
// The bind sources opened and checked as in the gateway's own spawns (dist/process/bwrap/launch.js).
const { renderSandboxLaunch } = require(join(__dirname, '..', 'process', 'bwrap', 'launch.js'));
const socketPath = process.env.EXECGATE_SPAWNER_SOCKET;
delete process.env.EXECGATE_SPAWNER_SOCKET;
const POOL = 4;
const pool = [];
let filling = 0;

function send(message) {
  if (process.connected) process.send(message);
}

// Resolves once the token is in the kernel's buffer, before the socket is handed to a child.
function open() {
  return new Promise((resolve, reject) => {
    const socket = connect(socketPath);
    socket.pause();
    socket.once('error', reject);
    socket.token = randomBytes(16).toString('hex');
    socket.write(KEY + socket.token, (error) => (error ? reject(error) : resolve(socket)));
  });
}

function fill() {
  while (pool.length + filling < POOL) {
    filling += 1;
    open().then((socket) => { pool.push(socket); }, () => { /* the next request opens its own */ })
      .finally(() => { filling -= 1; });
  }
}

function take() {
  const socket = pool.shift();
  return socket ? Promise.resolve(socket) : open();
}

/*
 * The run's output pipes, when the gateway offers them (its /proc entries of their write ends,
 * see process/spawner/pipes.ts): opened here for writing, so the child gets pipes it can open by
 * name (/dev/stdout). Undefined where they cannot be opened (another user's gateway, /proc not
 * readable): the child then gets sockets.
 */
async function openOutputs(paths) {
  if (!Array.isArray(paths) || paths.length !== 2) return undefined;
  // Opened on the thread pool: opening a pipe for writing waits for a reader, which the gateway
  // holds; if the gateway is gone meanwhile, the disconnect still ends this process.
  const settled = await Promise.allSettled(paths.map((path) => fs.promises.open(path, fs.constants.O_WRONLY)));
  const handles = settled.filter((s) => s.status === 'fulfilled').map((s) => s.value);
  if (handles.length === 2) return handles;
  for (const handle of handles) await handle.close().catch(() => undefined);
  return undefined;
}

async function run(request) {
  const { id } = request;
  let sockets = [];
  let child;
  let sources;
  const opened = await openOutputs(request.outputs);
  const outputs = opened ? opened.map((handle) => handle.fd) : undefined;
  try {
    const settled = await Promise.allSettled(Array.from({ length: (request.stdin ? 1 : 0) + (outputs ? 0 : 2) }, take));
    sockets = settled.filter((s) => s.status === 'fulfilled').map((s) => s.value);
    const failed = settled.find((s) => s.status === 'rejected');
    if (failed) throw failed.reason;
    // Sandboxed: bubblewrap reads its options from descriptor 3 and mounts descriptors this
    // process opened and checked (process/bwrap/launch.ts).
    sources = request.sandbox ? renderSandboxLaunch(fs, request.sandbox, [request.shell].concat(request.args)) : undefined;
    const stdio = [...(request.stdin ? [] : ['ignore']), ...sockets, ...(outputs || [])];
    child = sources
      ? spawn(sources.file, sources.args, { cwd: '/', env: request.env, detached: true, stdio: [...stdio, 'pipe', ...sources.fds] })
      : spawn(request.shell, request.args, { cwd: request.cwd, env: request.env, detached: true, stdio });
    if (sources && child.stdio[3]) {
      child.stdio[3].on('error', () => { /* bubblewrap exited before reading: its exit says why */ });
      child.stdio[3].end(sources.data);
    }
  } catch (error) {
    send({ t: 'failed', id, code: (error && error.code) || 'unknown', message: String((error && error.message) || error), path: error && typeof error.path === 'string' ? error.path : undefined });
    return;
  } finally {
    for (const socket of sockets) socket.destroy();
    // The child has its own copies from the spawn on.
    for (const handle of opened || []) void handle.close().catch(() => undefined);
    if (sources) for (const fd of sources.fds) { try { fs.closeSync(fd); } catch { /* closed */ } }
    fill();
  }
  if (child.pid === undefined) {
    child.once('error', (error) => send({ t: 'failed', id, code: error.code || 'unknown', message: error.message }));
    return;
  }
  child.on('error', () => { /* after a pid, only kill() reports errors; none are sent here */ });
  child.once('exit', (code, signal) => send({ t: 'exit', id, code, signal }));
  const tokens = sockets.map((socket) => socket.token);
  send({ t: 'spawned', id, pid: child.pid, stdin: request.stdin ? tokens.shift() : null, stdout: outputs ? null : tokens[0], stderr: outputs ? null : tokens[1] });
}

process.on('message', (message) => {
  if (message && message.t === 'spawn') void run(message);
});
// The gateway closed the channel or died (even by SIGKILL): remove its socket and go.
process.on('disconnect', () => {
  try { unlinkSync(socketPath); } catch { /* already removed */ }
  try { rmdirSync(dirname(socketPath)); } catch { /* already removed */ }
  process.exit(0);
});
// The gateway's key arrives on stdin (never on an argv or in the environment); then the pool is opened.
let KEY = '';
process.stdin.setEncoding('latin1');
process.stdin.on('data', (text) => { KEY += text; });
process.stdin.on('end', () => {
  Promise.allSettled(Array.from({ length: POOL }, open)).then((opened) => {
    for (const result of opened) if (result.status === 'fulfilled') pool.push(result.value);
    fill();
    send({ t: 'ready' });
  });
});
