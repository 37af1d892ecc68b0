/*
 * The interception CA made off the event loop and ahead of need (egress/ca.ts, proxy-core.ts):
 * its keys come from the thread pool while the event loop keeps turning, the certificate it makes
 * chains its leaves, a failure is a coded error, and node-forge is loaded only by a proxy that
 * intercepts (a real process, its own module cache, built from dist/).
 */
import { spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { ExecgateError } from '../../src/errors';
import { createEgressCaAsync } from '../../src/egress/ca';

const DIST = join(__dirname, '..', '..', 'dist');

describe('the CA made on the thread pool', () => {
  test('the event loop turns while its keys are generated, and its leaves chain to it', async () => {
    let turns = 0;
    let counting = true;
    const tick = (): void => {
      turns += 1;
      if (counting) setImmediate(tick);
    };
    setImmediate(tick);
    const ca = await createEgressCaAsync();
    counting = false;
    // Two RSA-2048 keys made on this thread would have held the loop for their whole generation.
    expect(turns).toBeGreaterThan(1);
    const caCert = new X509Certificate(ca.certPem);
    expect(caCert.ca).toBe(true);
    expect(ca.getSecureContext('a.test')).toBe(ca.getSecureContext('a.test'));
  });

  test('a CA that cannot be made is a coded error', async () => {
    const error = await createEgressCaAsync({ keyBits: 8 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(ExecgateError);
    expect((error as ExecgateError).code).toBe('EXECGATE_ERR_EGRESS_CA_FAILED');
  });
});

const SCRIPT = `
const [dist] = process.argv.slice(1);
const loaded = () => Object.keys(require.cache).some((path) => path.includes('/node-forge/'));
const { EgressProxy } = require(dist + '/egress/proxy.js');
const { normalizeNetworkPolicy } = require(dist + '/policy/egress-settings.js');
const { parseHostPatterns } = require(dist + '/egress/hosts.js');
const { createSentinel } = require(dist + '/egress/sentinel.js');
(async () => {
  const out = { start: loaded() };
  const proxy = new EgressProxy({ runtimeDir: require('node:os').tmpdir() });
  const network = normalizeNetworkPolicy({ mode: 'open' });
  const plain = await proxy.openRun({ runId: 'plain', network, credentials: { username: 'a', password: 'b' }, shared: true });
  out.plain = loaded();
  const value = 'a-value-long-enough-0123456789';
  const bound = await proxy.openRun({ runId: 'bound', network, credentials: { username: 'c', password: 'd' }, shared: true,
    injections: [{ ref: 'secret:x', value, sentinel: createSentinel(value), hosts: parseHostPatterns(['x.test'], 'hosts') }] });
  out.injected = loaded();
  out.bundle = require('node:fs').readFileSync(bound.caBundlePath, 'utf8').endsWith(proxy.getCaCertificate());
  await plain.close(); await bound.close(); await proxy.close();
  process.stdout.write(JSON.stringify(out));
})().catch((error) => { process.stderr.write(String(error.stack)); process.exit(1); });
`;

(existsSync(join(DIST, 'egress', 'proxy.js')) ? describe : describe.skip)('node-forge', () => {
  test('is not loaded by a proxy whose runs do not intercept, and is by the first that does, whose bundle trusts the CA', () => {
    const result = spawnSync(process.execPath, ['-e', SCRIPT, DIST], { encoding: 'utf8', timeout: 60_000 });
    expect(result.stderr).toBe('');
    expect(JSON.parse(result.stdout)).toEqual({ start: false, plain: false, injected: true, bundle: true });
  });
});
