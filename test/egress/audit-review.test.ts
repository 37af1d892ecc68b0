/*
 * A run's egress decisions as a reviewer reads them: `execgate audit show RUN_ID` (text) and the
 * HTML report's run view (rendered by headless Chromium). Three requests to the same host are
 * three decisions, shown as one line counted x3, never folded into what reads like one request;
 * a different decision (a refused host) is its own line; every record is listed with its host.
 * The proxy writes the records through its real decision hook into the real audit log.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { AuditLog } from '../../src/audit/log';
import { EGRESS_AUDIT_EVENT, getEgressAuditFields } from '../../src/egress/audit';
import { parseHostPatterns } from '../../src/egress/hosts';
import { EgressProxy } from '../../src/egress/proxy';
import { normalizeNetworkPolicy, normalizeSecretBindings } from '../../src/policy/egress-settings';
import { createSentinel } from '../../src/egress/sentinel';
import { CHROMIUM_FLAGS } from '../audit/cdp';
import { execgate } from '../audit/helpers';
import { makeTempDir } from '../helpers/tmp';
import { getThrough, makeNames, startService, type TestService } from './helpers';

const VALUE = 'review-test-secret-value-0123456789';
const RUN = 'run_egress_review_1';
const CHROMIUM = '/usr/bin/chromium';

let tmp: ReturnType<typeof makeTempDir>;
let service: TestService;
let home: string;


beforeAll(async () => {
  tmp = makeTempDir('execgate-egress-review-');
  service = await startService('allowed');
  home = join(tmp.dir, 'home');
  const audit = new AuditLog({ home, path: join(home, 'audit.log'), env: {} });
  const proxy = new EgressProxy({
    ...makeNames({ 'allowed.test': service }),
    runtimeDir: tmp.dir,
    onDecision: (decision) => audit.write(EGRESS_AUDIT_EVENT, getEgressAuditFields(decision)),
  });
  const sentinel = createSentinel(VALUE);
  audit.write('exec.request', { runId: RUN, command: 'for i in 1 2 3; do curl -H "Authorization: Bearer <<secret:api>>" http://allowed.test/; done; curl http://attacker.test/', mode: 'sync' });
  audit.write('exec.started', { runId: RUN, command: 'for i in 1 2 3; do curl -H "Authorization: Bearer <<secret:api>>" http://allowed.test/; done; curl http://attacker.test/', mode: 'sync', refs: [{ kind: 'secret', id: 'api', ref: '<<secret:api>>', found: true, source: 'memory' }] });
  const run = await proxy.openRun({
    runId: RUN,
    network: normalizeNetworkPolicy({ mode: 'allowlist', allow: ['allowed.test'] }),
    // Plain HTTP to a local service: the binding names it in `http`.
    injections: [{ ref: 'secret:api', value: VALUE, sentinel, hosts: parseHostPatterns(['allowed.test'], 'hosts'), binding: normalizeSecretBindings([{ ref: 'secret:api', hosts: ['allowed.test'], delivery: 'inject', http: ['allowed.test'] }])[0] }],
  });
  for (let i = 0; i < 3; i++) expect(await getThrough(run, 'http://allowed.test/', { authorization: `Bearer ${sentinel}` })).toBe(200);
  expect(await getThrough(run, 'http://attacker.test/steal')).toBe(403);
  audit.write('exec.finished', { runId: RUN, exitCode: 0, durationMs: 40 });
  await run.close();
  await proxy.close();
  audit.close();
  expect(readFileSync(join(home, 'audit.log'), 'utf8')).not.toContain(VALUE);
});

afterAll(async () => {
  await service.close();
  tmp.cleanup();
});

const ALLOWED = 'allowed allowed.test:80 via http, GET 200, rule allow:allowed.test, injected secret:api';
const DENIED = 'denied attacker.test:80 via http, GET 403, rule not-allowlisted';

test('audit show: repeated decisions are counted (x3), distinct ones listed, every record shown with its host', () => {
  const show = execgate(['audit', 'show', RUN], home);
  expect(show.stderr).toBe('');
  expect(show.status).toBe(0);
  const lines = show.stdout.split('\n');
  expect(lines).toContain('egress    4 decision(s), identical ones counted (xN):');
  expect(lines).toContain(`  ${ALLOWED}  x3`);
  expect(lines).toContain(`  ${DENIED}`);
  // The records section lists each decision on its own, with what it was about.
  const records = lines.filter((line) => line.includes('egress.decision'));
  expect(records).toHaveLength(4);
  expect(records.filter((line) => line.endsWith(ALLOWED))).toHaveLength(3);
  expect(records.filter((line) => line.endsWith(DENIED))).toHaveLength(1);
  // Nothing of the decisions is left to the generic "member: value" lines (which kept only the last one).
  expect(show.stdout).not.toMatch(/^egress\.decision\./m);
});

const maybeChromium = existsSync(CHROMIUM) ? test : test.skip;
maybeChromium('the HTML report\'s run view lists the decisions with their counts', () => {
  const page = join(tmp.dir, 'report.html');
  const report = execgate(['audit', 'report', '--html', page], home);
  expect(report.status).toBe(0);
  const profile = join(tmp.dir, 'profile');
  mkdirSync(profile);
  const dom = spawnSync(CHROMIUM, [...CHROMIUM_FLAGS, `--user-data-dir=${profile}`, '--dump-dom', `${pathToFileURL(page).href}#run=${RUN}`], {
    encoding: 'utf8', timeout: 60_000, maxBuffer: 64 * 1024 * 1024, env: { PATH: process.env.PATH, HOME: tmp.dir },
  }).stdout;
  expect(dom).toContain('data-ready="1"');
  expect(dom).toContain('<dt>egress (4)</dt>');
  expect(dom).toContain(`<div class="code">${ALLOWED}<span class="pill">×3</span></div>`);
  expect(dom).toContain(`<div class="code">${DENIED}</div>`);
  // The record list collapses the repeats with a count instead of a wall of identical names.
  expect(dom).toContain('exec.request → exec.started → egress.decision ×4 → exec.finished');
});
