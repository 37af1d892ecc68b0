/*
 * The real Secret Service: a private session bus with gnome-keyring (test/helpers/keyring.ts)
 * holds an item; the gateway's environment names the bus. Unsandboxed, a command asks the
 * keyring for the item and gets it; sandboxed, in every mode, it cannot reach the bus. The
 * working directory is /tmp itself, so the bus socket (under /tmp) is inside the writable root:
 * only the hiding of the socket path named in DBUS_SESSION_BUS_ADDRESS keeps it out of reach.
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeWithKeyring, startTestKeyring, type TestKeyring } from '../helpers/keyring';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { makeGateway, MODES, runIn } from './helpers';

jest.setTimeout(120_000);

const ITEM = 'keyring-item-value-0123456789';

describeWithKeyring('the session bus and gnome-keyring from inside a run', () => {
  let keyring: TestKeyring;
  let tmp: ReturnType<typeof makeTempDir>;
  beforeAll(async () => {
    keyring = await startTestKeyring();
    const stored = spawnSync('secret-tool', ['store', '--label=probe', 'service', 'sandbox-test', 'username', 'probe'], { env: keyring.env, input: ITEM, encoding: 'utf8' });
    expect(stored.status).toBe(0);
    tmp = makeTempDir('execgate-sbx-keyring-');
  });
  afterAll(async () => {
    await keyring.stop();
    rmSync(tmp.dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 });
  });

  // The child's environment does not name the bus (the sanitizer drops it); an attacker finds
  // the socket instead, as it would find any bus socket on a machine.
  const probe = () => `export DBUS_SESSION_BUS_ADDRESS=unix:path=${keyring.address.replace(/^unix:path=/, '').split(',')[0]}; ` +
    'secret-tool lookup service sandbox-test username probe 2>&1 | rev; ' +
    'dbus-send --session --print-reply --dest=org.freedesktop.DBus /org/freedesktop/DBus org.freedesktop.DBus.ListNames 2>&1 | grep -c org.freedesktop.secrets | sed "s/^/names=/"';
  const gatewayFor = (mode: 'required' | 'off') => makeGateway({
    home: join(tmp.dir, `state-${mode}`),
    env: baseEnv({ ...keyring.env as Record<string, string>, HOME: join(tmp.dir, 'user'), EXECGATE_KEYRING: 'off' }),
    cwd: tmpdir(),
    sandbox: { mode },
  });
  const reversed = ITEM.split('').reverse().join('');

  test('control: unsandboxed, the command reads the keyring item over the bus', async () => {
    const gateway = gatewayFor('off');
    try {
      const run = await runIn(gateway, 'sync', probe());
      expect(run.output).toContain(reversed);
      expect(run.output).toContain('names=1');
    } finally {
      await gateway.close();
    }
  });

  test.each(MODES)('sandboxed (%s): the bus and the keyring are out of reach', async (mode) => {
    const gateway = gatewayFor('required');
    try {
      const run = await runIn(gateway, mode, probe());
      expect(run.sandboxed).toBe(true);
      expect(run.output).not.toContain(reversed);
      expect(run.output).toContain('names=0');
    } finally {
      await gateway.close();
    }
  });
});
