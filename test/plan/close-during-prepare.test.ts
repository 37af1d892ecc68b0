/*
 * close() while a request is still being prepared (its secrets being looked up): the request
 * must refuse to start, with the coded error, and close() must not return before it has. A
 * source whose lookup waits for the test holds the request in preparation, so the order is
 * proved by the test, not by timing. Before this was fixed, such a background run started after
 * close() had returned, outlived it unrecorded, and its end threw on the closed audit log.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway } from '../../src/gateway';
import { baseEnv, makeTempDir, UNSANDBOXED_POLICY } from '../helpers/tmp';

let tmp: ReturnType<typeof makeTempDir>;

beforeEach(() => { tmp = makeTempDir(); });
afterEach(() => tmp.cleanup());

test.each(['sync', 'pty', 'background'] as const)('close() during preparation (%s): nothing starts, the request gets EXECGATE_ERR_GATEWAY_CLOSED', async (mode) => {
  let asked!: () => void;
  let release!: () => void;
  const lookedUp = new Promise<void>((resolve) => { asked = resolve; });
  const held = new Promise<void>((resolve) => { release = resolve; });
  const home = join(tmp.dir, 'home');
  const gateway = createGateway({
    // Unsandboxed: the marker is written straight into the test's directory.
    policy: UNSANDBOXED_POLICY, home, env: baseEnv(), cwd: tmp.dir,
    sources: [{
      name: 'held', kinds: ['secret'],
      lookup: async () => { asked(); await held; return { found: true, value: 'held-secret-value-0123456789' }; },
    }],
  });
  const run = gateway.exec({ command: 'touch ran; sleep 30 # <<secret:held>>', mode });
  const outcome = run.then(() => 'started', (error: { code?: string }) => error.code);
  await lookedUp;
  let closeReturned = false;
  const closed = gateway.close().then(() => { closeReturned = true; });
  // close() waits for the request being prepared: it has not returned while the lookup is held.
  await new Promise((resolve) => setImmediate(resolve));
  expect(closeReturned).toBe(false);
  release();
  await closed;
  expect(await outcome).toBe('EXECGATE_ERR_GATEWAY_CLOSED');
  expect(existsSync(join(tmp.dir, 'ran'))).toBe(false);
  const records = readFileSync(join(home, 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
  expect(records.map((record) => record.event)).not.toContain('exec.started');
  expect(records.find((record) => record.event === 'exec.rejected')).toMatchObject({ code: 'EXECGATE_ERR_GATEWAY_CLOSED' });
  expect(records.at(-1)!.event).toBe('gateway.stopped');
});
