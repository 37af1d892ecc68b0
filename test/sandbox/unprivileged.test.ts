/*
 * The gateway as an unprivileged user. Joining the shared network namespace then means entering
 * the user namespace bubblewrap made for the holder first (nsenter --user --net), and the egress
 * bridge starts the same way; as root neither is needed, so a suite run as root never takes that
 * path. Here a Node process runs as `nobody` (setpriv when the suite runs as root, the current
 * user otherwise) and drives a gateway built from dist/: sandboxed runs with network open
 * (through the proxy, to a service this test starts) and none, and a dev server started by a
 * background run that a later sync run reaches on the shared loopback while the host's loopback
 * stays out of reach.
 */
import { spawn, spawnSync } from 'node:child_process';
import { accessSync, chmodSync, chownSync, constants, cpSync, existsSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { getConnectHandoffSupport } from '../../src/egress/tcp-notify';
import { checkPlatform } from '../../src/sandbox';
import { listenBelowEphemeral } from '../helpers/listen';
import { makeTempDir } from '../helpers/tmp';

const REPO = join(__dirname, '..', '..');
const NOBODY = 65534;
const isRoot = process.getuid?.() === 0;
const setpriv = ['/usr/bin/setpriv', '/bin/setpriv'].find((path) => existsSync(path));

/** Why this platform cannot run the test, or undefined. */
function whyNot(): string | undefined {
  if (!existsSync(join(REPO, 'dist', 'index.js'))) return 'dist/ is not built (npm run build)';
  const platform = checkPlatform();
  if (!platform.ok) return platform.reason;
  if (isRoot && !setpriv) return 'running as root without setpriv(1) to become an unprivileged user';
  return undefined;
}

/** Victim runs of the working-directory race per gateway (cold, then warm); `npm run race` runs more. */
const RACE_RUNS = Number(process.env.EXECGATE_RACE_RUNS ?? 150);

const reason = whyNot();
if (reason) {
   
  console.warn(`SKIPPED unprivileged gateway test: ${reason}`);
}
const maybe = reason ? describe.skip : describe;

/** The program the unprivileged gateway runs: every run's result, as JSON on stdout. */
const SCRIPT = String.raw`
const [, , dist, dir, servicePort, hostPort, raceRuns] = process.argv;
const { createGateway } = require(dist);
const { readFileSync, writeFileSync, mkdirSync } = require('node:fs');
const out = {};
const started = (home) => readFileSync(home + '/audit.log', 'utf8').trim().split('\n').map((l) => JSON.parse(l)).filter((r) => r.event === 'exec.started').map((r) => r.sandbox);
(async () => {
  for (const network of ['open', 'none']) {
    const work = dir + '/' + network;
    mkdirSync(work);
    const policy = work + '/policy.yaml';
    writeFileSync(policy, 'version: 1\nsandbox: { mode: required, network: ' + network + ' }\n');
    const home = work + '/home';
    const gateway = createGateway({
      home, cwd: work, policyFile: policy,
      env: { PATH: '/usr/bin:/bin', HOME: dir, LANG: 'C.UTF-8', EXECGATE_KEYRING: 'off' },
      egress: {
        resolver: async (host) => { if (host === 'service.test') return ['203.0.113.10']; throw Object.assign(new Error('ENOTFOUND ' + host), { code: 'ENOTFOUND' }); },
        dial: (address, port) => (address === '203.0.113.10' ? { host: '127.0.0.1', port: Number(servicePort) } : { host: address, port }),
      },
    });
    const result = {};
    try {
      const first = await gateway.exec({ command: 'id -u; curl -sS --max-time 20 http://service.test/from-' + network + '; echo " curl=$?"' });
      result.first = { exitCode: first.exitCode, stdout: first.stdout, stderr: first.stderr };
      // A dev server in a background run, on the gateway's loopback.
      const server = await gateway.exec({ command: 'exec python3 -u -m http.server 0 --bind 127.0.0.1 > server.log 2>&1', mode: 'background' });
      const later = await gateway.exec({
        // The server says its port once it listens (python may take long to start on a loaded machine).
        command: 'for i in $(seq 1200); do port=$(sed -n "s/.*port \\([0-9]*\\).*/\\1/p" server.log | head -1); [ -n "$port" ] && break; sleep 0.05; done; echo "port=$port"; ' +
          'for i in $(seq 100); do curl -sS --noproxy "*" --max-time 5 -o /dev/null -w "dev=%{http_code}\\n" "http://127.0.0.1:$port/" && break; sleep 0.05; done; ' +
          'curl -sS --noproxy "*" --max-time 5 "http://127.0.0.1:' + hostPort + '/"; echo "host=$?"',
      });
      result.later = { exitCode: later.exitCode, stdout: later.stdout };
      await gateway.background.kill(server.id);
      result.sandbox = started(home);
    } catch (error) {
      result.error = { code: error.code, message: error.message };
    }
    await gateway.close();
    out[network] = result;
  }
  // Raw TCP handed over connected (egress/tcp-notify.ts) as this user: the supervisor takes the
  // run's socket and installs one it dialled, across the user namespace bubblewrap made.
  {
    const work = dir + '/handoff';
    mkdirSync(work);
    const policy = work + '/policy.yaml';
    writeFileSync(policy, 'version: 1\nsandbox: { mode: required, network: { mode: allowlist, hostServices: [' + servicePort + '] } }\n');
    const gateway = createGateway({ home: work + '/home', cwd: work, policyFile: policy, env: { PATH: '/usr/bin:/bin', HOME: dir, LANG: 'C.UTF-8', EXECGATE_KEYRING: 'off' } });
    try {
      const run = await gateway.exec({ command: 'python3 -c "import socket; s = socket.create_connection((\'127.0.0.1\', ' + servicePort + ')); print(\'peer\', *s.getpeername()); s.sendall(b\'GET /handoff HTTP/1.0\\r\\n\\r\\n\'); print(s.recv(4096).decode().split(\'\\r\\n\\r\\n\')[-1])"' });
      out.handoff = { exitCode: run.exitCode, stdout: run.stdout, stderr: run.stderr };
    } catch (error) {
      out.handoff = { error: { code: error.code, message: error.message } };
    }
    await gateway.close();
  }
  // The kernel surface and the working-directory race, as this user: the state directory inside
  // the workspace, background runs flipping an ancestor of the victims' directory with symlinks to
  // it (one straight, one through a directory under /tmp), victims reading every name it could have.
  const race = dir + '/race';
  const state = race + '/.execgate';
  mkdirSync(state, { recursive: true });
  // The programs the runs start, in the workspace (the rest of the host's /tmp is not visible inside).
  for (const name of ['probe.py', 'flipper.py']) require('node:fs').copyFileSync(dir + '/' + name, race + '/' + name);
  const marker = require('node:crypto').randomBytes(16).toString('hex');
  writeFileSync(state + '/marker.key', marker + '\n');
  mkdirSync(race + '/w/a/b', { recursive: true });
  mkdirSync(race + '/w/c', { recursive: true });
  mkdirSync(dir + '/planted');
  require('node:fs').symlinkSync(state, dir + '/planted/b');
  require('node:fs').symlinkSync(dir + '/planted', race + '/w/l');
  require('node:fs').symlinkSync(state, race + '/w/s');
  const policy = race + '/policy.yaml';
  writeFileSync(policy, 'version: 1\nsandbox: { mode: required, network: none }\n');
  const victim = 'cat marker.key ../marker.key 2>/dev/null; cat ' + state + '/marker.key ' + dir + '/planted/b/marker.key ' + race + '/w/l/b/marker.key ' + race + '/w/s/marker.key 2>/dev/null; for f in /tmp/*/marker.key /tmp/*/*/marker.key /tmp/*/*/*/marker.key; do cat "$f" 2>/dev/null; done; echo victim-done';
  out.race = {};
  for (const warmSandboxes of [0, 1]) {
    const gateway = createGateway({ home: state, cwd: race, policyFile: policy, warmSandboxes, env: { PATH: '/usr/bin:/bin', HOME: dir, LANG: 'C.UTF-8', EXECGATE_KEYRING: 'off' } });
    const tally = { runs: 0, ran: 0, refused: 0, leaked: 0, other: [], flipping: [] };
    try {
      if (warmSandboxes === 0) out.probe = (await gateway.exec({ command: 'python3 ' + race + '/probe.py 2>&1; unshare -Urm true 2>/dev/null && echo "unshare-Urm: ok" || echo "unshare-Urm: refused"; bwrap --ro-bind / / true 2>/dev/null && echo "bwrap: ok" || echo "bwrap: refused"' })).stdout;
      const flippers = [];
      for (const [a, b] of [['w/a', 'w/l'], ['w/c', 'w/s']]) {
        const started = await gateway.exec({ command: 'exec python3 ' + race + '/flipper.py ' + a + ' ' + b + ' 0.0005 0.00005', mode: 'background', timeout: 0 });
        flippers.push(started);
        for (let i = 0; i < 600 && !readFileSync(started.outputPath, 'utf8').includes('flipping'); i++) await new Promise((r) => setTimeout(r, 50));
      }
      // Every run counts; on a loaded machine the flippers may win most of them (refused), so the
      // runs go on (up to four times as many) until a tenth of the asked number actually ran.
      for (let i = 0; i < 4 * Number(raceRuns) && (i < Number(raceRuns) || tally.ran <= Number(raceRuns) / 10); i++) {
        tally.runs += 1;
        try {
          const result = await gateway.exec({ command: victim, cwd: race + (i % 2 ? '/w/c' : '/w/a/b') });
          if (result.output.includes(marker)) tally.leaked += 1;
          else tally.ran += 1;
        } catch (error) {
          if (/^EXECGATE_ERR_(SANDBOX_MISMATCH|SANDBOX_PATH|SANDBOX_FAILED|INVALID_CWD|CWD_NOT_FOUND)$/.test(error.code)) tally.refused += 1;
          else tally.other.push(error.code + ': ' + error.message);
        }
      }
      tally.flipping = flippers.map((f) => gateway.background.get(f.id).state === 'running' && readFileSync(f.outputPath, 'utf8').includes('flipping'));
    } finally {
      await gateway.close();
    }
    out.race[warmSandboxes ? 'warm' : 'cold'] = tally;
  }
  process.stdout.write(JSON.stringify(out));
})().catch((error) => { process.stderr.write(String(error && error.stack || error)); process.exit(1); });
`;

interface RaceTally {
  /** Whether each flipper was still flipping when the victims were done. */
  flipping: boolean[];
  runs: number;
  ran: number;
  refused: number;
  leaked: number;
  other: string[];
}

interface Outcome {
  first?: { exitCode: number; stdout: string; stderr: string };
  later?: { exitCode: number; stdout: string };
  sandbox?: Array<{ sandboxed: boolean; network: { mode: string; shared: boolean; namespace?: string } }>;
  error?: { code: string; message: string };
}

maybe('a gateway run by an unprivileged user', () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let service: Server;
  let host: Server;
  const hits: string[] = [];
  let outcome: Record<string, Outcome> & { race?: Record<string, RaceTally>; probe?: string };
  let uid: number;

  beforeAll(async () => {
    tmp = makeTempDir('execgate-unprivileged-');
    service = createServer((req, res) => { hits.push(req.url ?? ''); res.end(`service saw ${req.url}`); });
    host = createServer((req, res) => { hits.push(`host:${req.url}`); res.end('HOST-LOOPBACK'); });
    await new Promise<void>((resolve) => service.listen(0, '127.0.0.1', resolve));
    // Below the ephemeral ports: the dev server (port 0 inside the namespace) never shares its number.
    await listenBelowEphemeral(host);
    const port = (s: Server): string => String((s.address() as AddressInfo).port);

    const asNobody = (argv: string[]): string[] => (isRoot ? [setpriv!, `--reuid=${NOBODY}`, `--regid=${NOBODY}`, '--clear-groups', '--', ...argv] : argv);
    uid = isRoot ? NOBODY : process.getuid!();
    if (isRoot) {
      chownSync(tmp.dir, NOBODY, NOBODY);
      chmodSync(tmp.dir, 0o700);
    }
    // The user must be able to read the built package and its dependencies; where directory
    // permissions keep it out, a copy in the test's directory does.
    let packageDir = REPO;
    const probe = asNobody(['/bin/sh', '-c', 'test -r "$1/dist/index.js" && test -r "$1/node_modules/undici/package.json"', 'sh', REPO]);
    const canRead = spawnSync(probe[0]!, probe.slice(1)).status === 0;
    if (!canRead) {
      packageDir = join(tmp.dir, 'package');
      for (const part of ['dist', 'node_modules', 'package.json']) cpSync(join(REPO, part), join(packageDir, part), { recursive: true });
      if (isRoot) spawnSync('chown', ['-R', `${NOBODY}:${NOBODY}`, packageDir]);
    }
    accessSync(join(packageDir, 'dist', 'index.js'), constants.R_OK);
    const script = join(tmp.dir, 'gateway.js');
    writeFileSync(script, SCRIPT);
    if (isRoot) chownSync(script, NOBODY, NOBODY);
    for (const name of ['probe.py', 'flipper.py']) {
      cpSync(join(__dirname, 'fixtures', name), join(tmp.dir, name));
      if (isRoot) chownSync(join(tmp.dir, name), NOBODY, NOBODY);
    }

    const argv = asNobody([process.execPath, script, join(packageDir, 'dist'), tmp.dir, port(service), port(host), String(RACE_RUNS)]);
    outcome = await new Promise((resolve, reject) => {
      const child = spawn(argv[0]!, argv.slice(1), {
        cwd: tmp.dir,
        env: { PATH: '/usr/bin:/bin', HOME: tmp.dir, LANG: 'C.UTF-8', EXECGATE_KEYRING: 'off' },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => { stdout += chunk.toString(); });
      child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
      child.on('error', reject);
      child.on('close', (code) => {
        try {
          resolve(JSON.parse(stdout) as typeof outcome);
        } catch {
          reject(new Error(`the unprivileged gateway exited ${code}: ${stderr}${stdout}`));
        }
      });
    });
  }, 120_000 + RACE_RUNS * 4_000);

  afterAll(async () => {
    await Promise.all([service, host].map((s) => new Promise((resolve) => s?.close(resolve))));
    tmp?.cleanup();
  });

  test('network open: runs share the gateway\'s namespace, reach the service through the proxy, and a dev server across runs, not the host loopback', () => {
    const open = outcome.open!;
    expect(open.error).toBeUndefined();
    // The records first: a gateway that could not join its own namespace says `shared: false`.
    const records = open.sandbox!;
    expect(records.length).toBeGreaterThanOrEqual(3);
    for (const record of records) expect(record).toMatchObject({ sandboxed: true, network: { mode: 'open', shared: true } });
    expect(new Set(records.map((r) => r.network.namespace)).size).toBe(1);
    expect(open.first!.stdout).toBe(`${uid}\nservice saw /from-open curl=0\n`);
    expect(open.later!.stdout).toMatch(/^port=\d+\ndev=200\n/);
    expect(open.later!.stdout).toMatch(/host=[1-9]\d*\n$/);
    expect(open.later!.stdout).not.toContain('HOST-LOOPBACK');
  });

  test('network none: the same sharing, and nothing leaves', () => {
    const none = outcome.none!;
    expect(none.error).toBeUndefined();
    const records = none.sandbox!;
    expect(records.length).toBeGreaterThanOrEqual(3);
    for (const record of records) expect(record).toMatchObject({ sandboxed: true, network: { mode: 'none', shared: true } });
    expect(new Set(records.map((r) => r.network.namespace)).size).toBe(1);
    expect(none.first!.stdout).toMatch(new RegExp(`^${uid}\\n curl=[1-9]\\d*\\n$`));
    expect(none.later!.stdout).toMatch(/^port=\d+\ndev=200\n/);
    expect(none.later!.stdout).toMatch(/host=[1-9]\d*\n$/);
    // (The hand-off's request, below, is the only other.)
    expect(hits.filter((hit) => hit !== '/handoff')).toEqual(['/from-open']);
  });

  (getConnectHandoffSupport() ? test : test.skip)('raw TCP to a host service is handed over connected as this user too', () => {
    const handoff = (outcome as { handoff?: { exitCode?: number; stdout?: string; error?: unknown } }).handoff!;
    expect(handoff.error).toBeUndefined();
    const port = (service.address() as AddressInfo).port;
    expect(handoff.stdout).toBe(`peer 127.0.0.1 ${port}\nservice saw /handoff\n`);
    expect(hits).toContain('/handoff');
  });

  test('the kernel surface as this user: no nested user namespace, the filter\'s system calls refused', () => {
    const text = outcome.probe ?? '';
    expect(text).toContain('probe-done');
    for (const name of ['keyctl', 'bpf', 'perf_event_open', 'userfaultfd', 'unshare', 'setns', 'clone', 'mount', 'open_by_handle_at', 'io_uring_setup']) {
      expect(text).toContain(`${name}: EPERM`);
    }
    expect(text).toContain('unshare-Urm: refused');
    expect(text).toContain('bwrap: refused');
  });

  test.each(['cold', 'warm'])(`the working-directory race as this user (%s): 0 reads in ${RACE_RUNS} runs or more`, (kind) => {
    const tally = outcome.race![kind]!;
    expect(tally.flipping).toEqual([true, true]);
    expect(tally.leaked).toBe(0);
    expect(tally.other).toEqual([]);
    expect(tally.ran + tally.refused).toBe(tally.runs);
    expect(tally.runs).toBeGreaterThanOrEqual(RACE_RUNS);
    expect(tally.ran).toBeGreaterThan(RACE_RUNS / 10);
  });
});
