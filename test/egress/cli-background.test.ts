/*
 * Background runs started from the command line (`execgate run --mode background`) are handed to
 * a detached supervisor and outlive the CLI process, where the egress proxy lives: such a run is
 * sandboxed with loopback only. A bound secret is refused with a coded error that says so, before
 * it is resolved and before anything runs; a run without one runs, and reaches nothing, while the
 * same command in the foreground goes out through the proxy. Real CLI, real sandbox, a real
 * server on 127.0.0.1 that the policy explicitly allows.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir, waitFor } from '../helpers/tmp';

const CLI = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');
const VALUE = 'ghp_CliBackgroundValue0123456789abcdef';
const maybe = checkPlatform(undefined).ok ? describe : describe.skip;

let tmp: ReturnType<typeof makeTempDir>;
let server: Server;
let port: number;
const seen: string[] = [];
let connections = 0;

beforeAll(async () => {
  tmp = makeTempDir('execgate-egress-cli-bg-');
  server = createServer((req, res) => {
    seen.push(`${req.url} ${String(req.headers['x-token'] ?? '')}`);
    res.end('reached\n');
  });
  server.on('connection', () => { connections += 1; });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = (server.address() as AddressInfo).port;
  // The loopback server is reachable through the proxy only because the policy names it as an IP literal.
  writeFileSync(join(tmp.dir, 'policy.yaml'), [
    'version: 1',
    `sandbox: { mode: required, network: { mode: allowlist, allow: ["127.0.0.1:${port}"] } }`,
    'secrets:',
    '  bind:',
    `    - { ref: "secret:gh", hosts: ["127.0.0.1:${port}"], delivery: inject }`,
  ].join('\n'));
});

afterAll(async () => {
  spawnSync(process.execPath, [CLI, 'ps', '--json'], { env: env(), encoding: 'utf8' });
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  tmp.cleanup();
});

beforeEach(() => {
  seen.length = 0;
  connections = 0;
});

function env(): NodeJS.ProcessEnv {
  return baseEnv({ EXECGATE_HOME: join(tmp.dir, 'home'), EXECGATE_POLICY: join(tmp.dir, 'policy.yaml'), EXECGATE_SECRET_GH: VALUE });
}

function execgate(args: string[]): { status: number | null; stdout: string; stderr: string } {
  const result = spawnSync(process.execPath, [CLI, ...args], { cwd: tmp.dir, env: env(), encoding: 'utf8', timeout: 60_000 });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** Asynchronous, for runs that reach the test's own server (spawnSync would block it from answering). */
function execgateAsync(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd: tmp.dir, env: env(), stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    child.on('error', reject);
    child.on('close', (status) => resolve({ status, stdout, stderr }));
  });
}

// NO_PROXY names 127.0.0.1 (the sandbox's own loopback); this request is for the host's, through the proxy.
const fetchCommand = (path: string, header = ''): string => `env -u NO_PROXY -u no_proxy curl -sS --max-time 10 ${header} http://127.0.0.1:${port}${path}`;

maybe('egress of background runs started from the CLI', () => {
  test('a bound secret is refused with EXECGATE_ERR_EGRESS_DETACHED: nothing resolved, nothing run', () => {
    const result = execgate(['run', '--mode', 'background', '--', `touch ran; ${fetchCommand('/bound', '-H "X-Token: <<secret:gh>>"')}`]);
    expect(result.status).not.toBe(0);
    expect(result.stderr).toContain('EXECGATE_ERR_EGRESS_DETACHED');
    expect(result.stderr).toContain('loopback only');
    expect(result.stderr).toContain('--mode sync');
    expect(result.stderr).not.toContain('EXECGATE_ERR_EGRESS_NEEDS_SANDBOX');
    expect(result.stderr + result.stdout).not.toContain(VALUE);
    expect(existsSync(join(tmp.dir, 'ran'))).toBe(false);
    expect(connections).toBe(0);
  });

  test('without a bound secret it runs with loopback only; the same command in the foreground reaches the allowed server', async () => {
    const started = execgate(['run', '--mode', 'background', '--', `${fetchCommand('/background')}; echo "rc=$?" > bg-result`]);
    expect(started.status).toBe(0);
    expect(await waitFor(() => existsSync(join(tmp.dir, 'bg-result')) && readFileSync(join(tmp.dir, 'bg-result'), 'utf8').endsWith('\n'), 30_000)).toBe(true);
    expect(readFileSync(join(tmp.dir, 'bg-result'), 'utf8')).toMatch(/^rc=[1-9]/);
    expect(connections).toBe(0);
    const sync = await execgateAsync(['run', '--', fetchCommand('/sync', '-H "X-Token: <<secret:gh>>"')]);
    expect(sync.stdout).toBe('reached\n');
    expect(seen).toEqual([`/sync ${VALUE}`]);
  });
});
