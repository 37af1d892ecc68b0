/*
 * Handing a run's egress endpoint to another proxy (what the CLI does for a background run's
 * detached supervisor): the adopting proxy serves the same socket path with the run's policy,
 * injections and proxy credentials, its own CA in the run's bundle; whichever side closes first,
 * nothing is left in the runtime directory. In-process here (the CLI path is in
 * cli-background.test.ts); the hand-over is a JSON round trip, as over the supervisor's pipe.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'node:http';
import { makeTempDir } from '../helpers/tmp';
import { parseHostPatterns } from '../../src/egress/hosts';
import { EgressProxy, type EgressRun, type HandedOffRun } from '../../src/egress/proxy';
import { normalizeNetworkPolicy, normalizeSecretBindings } from '../../src/policy/egress-settings';
import { createSentinel } from '../../src/egress/sentinel';
import { makeNames, startService, type TestService } from './helpers';

const VALUE = 'handoff-secret-value-0123456789';
const SENTINEL = createSentinel(VALUE);
const CREDENTIALS = { username: 'run', password: 'handoff-proxy-password' };

let tmp: ReturnType<typeof makeTempDir>;
let service: TestService;

beforeAll(async () => {
  tmp = makeTempDir('execgate-egress-handoff-');
  service = await startService('allowed');
});

afterAll(async () => {
  await service.close();
  tmp.cleanup();
});

function get(run: EgressRun, auth: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({
      socketPath: run.socketPath,
      path: 'http://allowed.test/handoff',
      headers: { host: 'allowed.test', authorization: `Bearer ${SENTINEL}`, 'proxy-authorization': `Basic ${Buffer.from(auth).toString('base64')}` },
    }, (res) => {
      let body = '';
      res.on('data', (chunk: Buffer) => { body += chunk.toString(); });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

async function handOver(runtimeDir: string): Promise<{ first: EgressProxy; second: EgressProxy; handed: EgressRun; adopted: EgressRun }> {
  const names = makeNames({ 'allowed.test': service });
  const first = new EgressProxy({ ...names, runtimeDir });
  const handed = await first.openRun({
    runId: 'run-handoff',
    network: normalizeNetworkPolicy({ mode: 'allowlist', allow: ['allowed.test'] }),
    // Plain HTTP to a local service: the binding names it in `http` (and the binding travels with the run).
    injections: [{ ref: 'secret:api', value: VALUE, sentinel: SENTINEL, hosts: parseHostPatterns(['allowed.test'], 'hosts'), binding: normalizeSecretBindings([{ ref: 'secret:api', hosts: ['allowed.test'], delivery: 'inject', http: ['allowed.test'] }])[0] }],
    credentials: CREDENTIALS,
  });
  const state = JSON.parse(JSON.stringify(handed.handOff())) as HandedOffRun;
  const second = new EgressProxy({ ...names, runtimeDir });
  const adopted = await second.adoptRun(state);
  return { first, second, handed, adopted };
}

beforeEach(() => { service.seen.length = 0; });

test('the adopting proxy serves the same path with the run\'s credentials, injections and redaction, and its own CA', async () => {
  const runtimeDir = join(tmp.dir, 'a');
  mkdirSync(runtimeDir);
  const { first, second, handed, adopted } = await handOver(runtimeDir);
  expect(adopted.socketPath).toBe(handed.socketPath);
  expect((await get(adopted, 'run:wrong')).status).toBe(407);
  const ok = await get(adopted, `${CREDENTIALS.username}:${CREDENTIALS.password}`);
  expect(ok.status).toBe(200);
  expect(service.seen.map((s) => s.headers.authorization)).toEqual([`Bearer ${VALUE}`]);
  expect(ok.body).not.toContain(VALUE);
  expect(ok.body).toContain('[REDACTED:secret:api]');
  const bundle = readFileSync(adopted.caBundlePath!, 'utf8');
  expect(bundle.endsWith(second.getCaCertificate())).toBe(true);
  expect(bundle).not.toContain(first.getCaCertificate());
  await first.close();
  // The handing proxy closed: the run's directory stays for the adopting one.
  expect(existsSync(adopted.dir)).toBe(true);
  expect((await get(adopted, `${CREDENTIALS.username}:${CREDENTIALS.password}`)).status).toBe(200);
  await second.close();
  expect(readdirSync(runtimeDir)).toEqual([]);
});

test('the run ends before the handing proxy closes: nothing is left either', async () => {
  const runtimeDir = join(tmp.dir, 'b');
  mkdirSync(runtimeDir);
  const { first, second, adopted } = await handOver(runtimeDir);
  await adopted.close();
  await second.close();
  await first.close();
  expect(readdirSync(runtimeDir)).toEqual([]);
});
