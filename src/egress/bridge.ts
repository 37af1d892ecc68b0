/*
 * How a sandboxed run reaches the proxy. The run has its own network namespace with nothing but
 * loopback, so it cannot reach any host port; the run's directory (holding the proxy's Unix
 * socket, the CA bundle and the Node preload) is bound into the sandbox instead, and a small
 * bridge inside listens on 127.0.0.1:PORT and carries each TCP connection to that socket. Tools
 * find it through the usual proxy variables.
 *
 * The bridge is a Node script (the gateway's own `node`, so nothing extra must be installed; the
 * sandbox-runtime peer uses socat for the same job) that starts listening *before* it spawns the
 * command, so the first connection of the command cannot race the bridge. It passes signals on and
 * exits the way the command did. In a PID namespace it dies with the sandbox like everything else.
 *
 * Node's built-in fetch ignores proxy variables before Node 24, so Node children get a `--require`
 * preload that installs undici's EnvHttpProxyAgent (it reads the same variables).
 */
import type { EgressRun } from './proxy';

/** Where the run's directory appears inside the sandbox (on the sandbox's private /tmp). */
export const EGRESS_MOUNT = '/tmp/.execgate-egress';
export const DEFAULT_BRIDGE_PORT = 3128;

const BRIDGE_SOURCE = `'use strict';
const net = require('net'), cp = require('child_process');
const [socketPath, port, ...argv] = process.argv.slice(1);
const fail = (code, message) => { process.stderr.write('execgate egress bridge: ' + message + '\\n'); process.exit(code); };
const server = net.createServer((c) => {
  const u = net.connect(socketPath);
  c.on('error', () => u.destroy()); u.on('error', () => c.destroy());
  c.pipe(u); u.pipe(c);
});
server.on('error', (e) => fail(125, 'cannot listen on 127.0.0.1:' + port + ': ' + e.message));
server.listen(Number(port), '127.0.0.1', () => {
  const env = { ...process.env };
  const extra = env.EXECGATE_EGRESS_NODE_OPTIONS; delete env.EXECGATE_EGRESS_NODE_OPTIONS;
  if (extra) env.NODE_OPTIONS = env.NODE_OPTIONS ? env.NODE_OPTIONS + ' ' + extra : extra;
  const child = cp.spawn(argv[0], argv.slice(1), { stdio: 'inherit', env });
  for (const s of ['SIGTERM', 'SIGINT', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2', 'SIGWINCH']) process.on(s, () => { try { child.kill(s); } catch {} });
  child.on('error', (e) => fail(127, 'cannot start ' + argv[0] + ': ' + e.message));
  child.on('exit', (code, signal) => {
    if (signal) { process.removeAllListeners(signal); process.kill(process.pid, signal); setTimeout(() => process.exit(128), 100); }
    else process.exit(code === null ? 1 : code);
  });
});
`;

export interface SandboxEgress {
  /** bubblewrap arguments: a private network namespace and the run's directory bound in. Append after the /tmp tmpfs. */
  readonly bwrapArgs: readonly string[];
  /** Variables for the child (proxy, CA trust, Node preload). */
  readonly env: Readonly<Record<string, string>>;
  /** The command line to run inside the sandbox in place of `argv` (the bridge, which spawns `argv`). */
  wrap(argv: readonly string[]): string[];
}

export function getSandboxEgress(run: EgressRun, options: { port?: number; nodePath?: string } = {}): SandboxEgress {
  const port = options.port ?? DEFAULT_BRIDGE_PORT;
  const nodePath = options.nodePath ?? process.execPath;
  const proxy = `http://127.0.0.1:${port}`;
  const env: Record<string, string> = {
    HTTP_PROXY: proxy, http_proxy: proxy, HTTPS_PROXY: proxy, https_proxy: proxy,
    ALL_PROXY: `socks5h://127.0.0.1:${port}`, all_proxy: `socks5h://127.0.0.1:${port}`,
    NO_PROXY: 'localhost,127.0.0.1,::1', no_proxy: 'localhost,127.0.0.1,::1',
    EXECGATE_EGRESS_NODE_OPTIONS: `--require ${EGRESS_MOUNT}/node-preload.cjs`,
  };
  if (run.caBundlePath) {
    const bundle = `${EGRESS_MOUNT}/ca.pem`;
    for (const name of ['SSL_CERT_FILE', 'NODE_EXTRA_CA_CERTS', 'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE', 'GIT_SSL_CAINFO']) env[name] = bundle;
  }
  return Object.freeze({
    // Read-only: connect(2) on the socket still works, while the CA bundle and the Node preload
    // (hard links shared by every run of the gateway) cannot be rewritten from inside.
    bwrapArgs: Object.freeze(['--unshare-net', '--ro-bind', run.dir, EGRESS_MOUNT]),
    env: Object.freeze(env),
    wrap: (argv: readonly string[]) => [nodePath, '-e', BRIDGE_SOURCE, '--', `${EGRESS_MOUNT}/egress.sock`, String(port), ...argv],
  });
}
