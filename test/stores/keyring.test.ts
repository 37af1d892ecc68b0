/*
 * The keyring source, the CLI and the vault key against a real Secret Service (a private
 * gnome-keyring-daemon on a private session bus), a locked one, a bus without one, and no
 * bus at all. Keyring code runs in child processes: a process binds to the first session bus
 * it talks to (see test/helpers/keyring.ts).
 */
import { join } from 'node:path';
import * as vaultExports from '../../src/stores';
import { describeWithKeyring, startTestKeyring, type TestKeyring } from '../helpers/keyring';
import { makeTempDir } from '../helpers/tmp';
import { childEnv, runChild, type ChildRun } from './fixtures/run-child';

jest.setTimeout(120_000);

const VALUE = 'keyring-value-7d41c9';

let temp: { dir: string; cleanup: () => void };
let home: string;

beforeEach(() => {
  temp = makeTempDir('execgate-keyring-test-');
  home = join(temp.dir, 'home');
});
afterEach(() => temp.cleanup());

/** Child-side helpers: `cli(args, stdin, env)` drives the secret commands with fake streams. */
function prelude(): string {
  return `
    const HOME = ${JSON.stringify(home)};
    const VALUE = ${JSON.stringify(VALUE)};
    const { Command } = require('commander');
    const { Readable, Writable } = require('node:stream');
    const { registerSecretCommands } = src('cli/commands/secret');
    const sources = src('refs/sources');
    const vaultModule = src('stores');
    const warnings = [];
    const logger = { warn: (obj, msg) => warnings.push({ obj, msg }) };
    async function cli(args, stdin = '', env = {}) {
      let out = '';
      let err = '';
      const sink = (append) => new Writable({ write(chunk, _e, cb) { append(String(chunk)); cb(); } });
      const io = {
        stdin: Readable.from([Buffer.from(stdin)]),
        stdout: sink((t) => { out += t; }),
        stderr: sink((t) => { err += t; }),
        env: { EXECGATE_HOME: HOME, ...env },
      };
      const program = new Command().exitOverride().configureOutput({ writeOut: (t) => { out += t; }, writeErr: (t) => { err += t; } });
      registerSecretCommands(program, io);
      try {
        await program.parseAsync(args, { from: 'user' });
        return { out, err };
      } catch (e) {
        return { out, err, code: e.code, status: e.status, message: e.message };
      }
    }
    async function attempt(promise) {
      try { return { ok: await promise }; } catch (e) { return { code: e.code, message: e.message, details: e.details }; }
    }
  `;
}

async function child(code: string, env: NodeJS.ProcessEnv): Promise<ChildRun & { result: any }> {
  // A bound on a hang (a child and the Secret Service on a loaded machine), not a speed check.
  const run = await runChild(`${prelude()}\n${code}`, { env, timeoutMs: 90_000 });
  const last = run.lines.at(-1) ?? {};
  if (!('result' in last)) throw new Error(`child failed: ${run.stdout}\n${run.stderr}`);
  // Whatever happened, no value reached the child's output streams.
  expect(run.stdout).not.toContain(VALUE);
  expect(run.stderr).not.toContain(VALUE);
  return { ...run, result: last.result };
}

describeWithKeyring('keyring: an unlocked Secret Service', () => {
  let keyring: TestKeyring;
  beforeAll(async () => {
    keyring = await startTestKeyring();
  });
  afterAll(async () => {
    await keyring?.stop();
  });
  const env = () => childEnv({ ...keyring.env, HOME: home });

  test('secret set/test/list/rm go to the keyring by default; the source resolves from it', async () => {
    const { result } = await child(
      `
      const out = {};
      out.set = await cli(['secret', 'set', 'gh-token'], VALUE + '\\n');
      const source = sources.createKeyringSource({ logger });
      out.available = await source.isAvailable();
      out.kinds = source.kinds;
      out.found = (await source.lookup('secret', 'gh-token')).value === VALUE;
      out.missing = await source.lookup('secret', 'not-there');
      out.decrypt = await source.lookup('decrypt', 'gh-token');
      out.test = await cli(['secret', 'test', 'gh-token']);
      out.list = JSON.parse((await cli(['secret', 'list', '--json'])).out);
      out.alsoVault = await cli(['secret', 'set', 'gh-token', '--store', 'vault'], VALUE);
      out.rm = await cli(['secret', 'rm', 'gh-token']);
      out.after = await source.lookup('secret', 'gh-token');
      out.rmAgain = await cli(['secret', 'rm', 'gh-token', '--store', 'keyring']);
      out.warnings = warnings;
      return out;
      `,
      env(),
    );
    expect(result.set).toEqual({ out: 'gh-token: stored in the keyring\n', err: '' });
    expect(result.available).toBe(true);
    expect(result.kinds).toEqual(['secret']);
    expect(result.found).toBe(true);
    expect(result.missing).toEqual({ found: false });
    expect(result.decrypt).toEqual({ found: false });
    expect(result.test.out).toBe('gh-token: resolves from keyring\n');
    expect(result.list.keyring).toEqual({ available: true });
    expect(result.list.entries).toContainEqual({ kind: 'secret', name: 'gh-token', store: 'keyring' });
    expect(result.alsoVault.out).toBe('gh-token: stored in the vault\n');
    expect(result.alsoVault.err).toContain('resolves from keyring, which is checked before the vault');
    expect(result.rm.out).toBe('gh-token: removed from the keyring and the vault\n');
    expect(result.after).toEqual({ found: false });
    expect(result.rmAgain.code).toBe('EXECGATE_ERR_SECRET_NOT_FOUND');
    expect(result.warnings).toEqual([]);
  });

  test('the value is in the Secret Service where other tools see it (secret-tool)', async () => {
    await child(`await cli(['secret', 'set', 'shared-name'], VALUE); return true;`, env());
    const { spawnSync } = await import('node:child_process');
    const lookup = spawnSync('secret-tool', ['lookup', 'service', 'execgate', 'username', 'shared-name'], { env: keyring.env, encoding: 'utf8' });
    expect(lookup.stdout).toBe(VALUE);
    await child(`await cli(['secret', 'rm', 'shared-name']); return true;`, env());
  });

  test('the vault key lives in the keyring; rotate-key replaces it; old key stops working', async () => {
    const { result } = await child(
      `
      const fs = require('node:fs');
      const vault = new vaultModule.Vault({ home: HOME, env: {} });
      await vault.set('alpha', VALUE);
      const blob = await vault.encrypt(VALUE);
      const document = JSON.parse(fs.readFileSync(vault.path, 'utf8'));
      const client = vaultModule.createKeyringClient();
      const account = '__vault_key__/' + document.vaultId;
      const oldKey = await client.get(account);
      const rotated = await vault.rotateKey();
      const newKey = await client.get(account);
      const accounts = await client.accounts();
      const listed = JSON.parse((await cli(['secret', 'list', '--json'])).out);
      return {
        keyStore: document.keyStore,
        keyFile: fs.existsSync(vault.keyPath),
        oldKeyLength: Buffer.from(oldKey, 'base64').length,
        changed: oldKey !== newKey,
        rotated: { entries: rotated.entries, keyStore: rotated.keyStore },
        pendingLeft: accounts.some((a) => a.startsWith('__vault_key_next__')),
        alpha: (await new vaultModule.Vault({ home: HOME, env: {} }).get('secret', 'alpha')) === VALUE,
        blob: (await new vaultModule.Vault({ home: HOME, env: {} }).get('decrypt', blob)) === VALUE,
        stale: await attempt(new vaultModule.Vault({ home: HOME, env: { EXECGATE_VAULT_KEY: oldKey } }).get('secret', 'alpha')),
        listedNames: listed.entries.map((e) => e.name),
        cliRotate: await cli(['vault', 'rotate-key']),
      };
      `,
      env(),
    );
    expect(result).toMatchObject({
      keyStore: 'keyring',
      keyFile: false,
      oldKeyLength: 32,
      changed: true,
      rotated: { entries: 2, keyStore: 'keyring' },
      pendingLeft: false,
      alpha: true,
      blob: true,
    });
    expect(result.stale.code).toBe('EXECGATE_ERR_VAULT_WRONG_KEY');
    expect(result.listedNames.filter((name: string) => name.startsWith('_'))).toEqual([]);
    expect(result.cliRotate.out).toMatch(/^Rotated the vault key: 2 entries re-encrypted .*the new key is in the OS keyring\.\n$/);
    // A fresh process finds the rotated key in the keyring.
    const again = await child(`return (await sources.createVaultSource({ home: HOME, env: {} }).lookup('secret', 'alpha')).value === VALUE;`, env());
    expect(again.result).toBe(true);
  });
});

describeWithKeyring('keyring: a locked Secret Service', () => {
  let keyring: TestKeyring;
  beforeAll(async () => {
    keyring = await startTestKeyring();
  });
  afterAll(async () => {
    await keyring?.stop();
  });

  test('fails closed with a coded error naming the reference; the vault key in it fails too', async () => {
    const env = childEnv({ ...keyring.env, HOME: home });
    await child(
      `
      await cli(['secret', 'set', 'locked-name'], VALUE);
      await new vaultModule.Vault({ home: HOME, env: {} }).set('in-vault', VALUE);
      return true;
      `,
      env,
    );
    keyring.lock();
    const { result } = await child(
      `
      const source = sources.createKeyringSource({ logger });
      return {
        available: await source.isAvailable(),
        locked: await attempt(source.lookup('secret', 'locked-name')),
        absent: await attempt(source.lookup('secret', 'absent-name')),
        vault: await attempt(sources.createVaultSource({ home: HOME, env: {} }).lookup('secret', 'in-vault')),
        set: await cli(['secret', 'set', 'another'], VALUE),
        test: await cli(['secret', 'test', 'locked-name']),
        list: await cli(['secret', 'list']),
        warnings,
      };
      `,
      env,
    );
    expect(result.available).toBe(true);
    expect(result.locked.code).toBe('EXECGATE_ERR_REF_SOURCE_FAILED');
    expect(result.locked.message).toContain('<<secret:locked-name>>');
    expect(result.locked.message).toMatch(/unlock/i);
    expect(result.locked.details).toEqual({ reference: '<<secret:locked-name>>', source: 'keyring', reason: 'EXECGATE_ERR_KEYRING_FAILED' });
    // A name the keyring does not hold is still just "not found" (search works while locked).
    expect(result.absent).toEqual({ ok: { found: false } });
    expect(result.vault.code).toBe('EXECGATE_ERR_REF_SOURCE_FAILED');
    expect(result.vault.message).toContain('<<secret:in-vault>>');
    expect(result.vault.details.reason).toBe('EXECGATE_ERR_KEYRING_FAILED');
    expect(result.set.code).toBe('EXECGATE_ERR_KEYRING_FAILED');
    expect(result.test.code).toBe('EXECGATE_ERR_KEYRING_FAILED');
    expect(result.list.code).toBe('EXECGATE_ERR_KEYRING_FAILED');
    expect(result.warnings).toEqual([]);
  });
});

describeWithKeyring('keyring: a session bus without a Secret Service', () => {
  let bus: TestKeyring;
  beforeAll(async () => {
    bus = await startTestKeyring({ secretService: false });
  });
  afterAll(async () => {
    await bus?.stop();
  });

  test('is unavailable: not found, one warning with the reason', async () => {
    const { result } = await child(
      `
      const source = sources.createKeyringSource({ logger });
      return {
        first: await source.lookup('secret', 'x'),
        second: await source.lookup('secret', 'y'),
        available: await source.isAvailable(),
        warnings,
      };
      `,
      childEnv({ ...bus.env, HOME: home }),
    );
    expect(result.first).toEqual({ found: false });
    expect(result.second).toEqual({ found: false });
    expect(result.available).toBe(false);
    expect(result.warnings).toHaveLength(1);
    expect(result.warnings[0].msg).toMatch(/^keyring unavailable: .*org\.freedesktop\.secrets/);
  });
});

const describeLinux = process.platform === 'linux' ? describe : describe.skip;

describeLinux('keyring: no D-Bus session at all', () => {
  const env = () => childEnv({ HOME: home, DBUS_SESSION_BUS_ADDRESS: undefined });

  test('the source warns once and resolution goes on to the vault', async () => {
    const { result } = await child(
      `
      await new vaultModule.Vault({ home: HOME, env: {}, keyring: false }).set('db', VALUE);
      const chain = [sources.createKeyringSource({ logger }), sources.createVaultSource({ home: HOME, env: {} })];
      async function resolve(name) {
        for (const source of chain) {
          const answer = await source.lookup('secret', name);
          if (answer.found) return source.name;
        }
        return null;
      }
      return { db: await resolve('db'), again: await resolve('db'), unknown: await resolve('nope'), warnings };
      `,
      env(),
    );
    expect(result).toMatchObject({ db: 'vault', again: 'vault', unknown: null });
    expect(result.warnings).toHaveLength(1);
    expect(result.warnings[0].msg).toMatch(/^keyring unavailable: DBus error: .*DBUS_SESSION_BUS_ADDRESS/);
    expect(result.warnings[0].obj).toMatchObject({ source: 'keyring', service: 'execgate' });
  });

  test('without a logger the warning goes through process.emitWarning, once', async () => {
    const run = await child(
      `
      const source = sources.createKeyringSource();
      await source.lookup('secret', 'a');
      await source.lookup('secret', 'b');
      return true;
      `,
      env(),
    );
    expect(run.stderr.match(/keyring unavailable/g)).toHaveLength(1);
  });

  test('a fresh machine: the CLI stores in the vault with a key file', async () => {
    const { result } = await child(
      `
      const fs = require('node:fs');
      return {
        set: await cli(['secret', 'set', 'api'], VALUE),
        keyring: await cli(['secret', 'set', 'api', '--store', 'keyring'], VALUE),
        test: await cli(['secret', 'test', 'api']),
        keyStore: JSON.parse(fs.readFileSync(HOME + '/vault.json', 'utf8')).keyStore,
        keyMode: (fs.statSync(HOME + '/vault.key').mode & 0o777).toString(8),
      };
      `,
      env(),
    );
    expect(result.set.out).toBe('api: stored in the vault\n');
    expect(result.keyring.code).toBe('EXECGATE_ERR_KEYRING_UNAVAILABLE');
    expect(result.keyring.message).toContain('DBUS_SESSION_BUS_ADDRESS');
    expect(result.test.out).toBe('api: resolves from vault\n');
    expect(result.keyStore).toBe('file');
    expect(result.keyMode).toBe('600');
  });
});

test('keyring errors are sorted into "no keyring" and "keyring refused"', () => {
  // Messages as @napi-rs/keyring 2.1 reports them (observed against gnome-keyring).
  const { classifyKeyringError, KeyringFailedError, KeyringUnavailableError } = vaultExports;
  const cases: [string, unknown][] = [
    ['Platform failure: DBus error: Using X11 for dbus-daemon autolaunch was disabled at compile time, set your DBUS_SESSION_BUS_ADDRESS instead', KeyringUnavailableError],
    ['Platform failure: DBus error: Failed to connect to socket /nonexistent: No such file or directory', KeyringUnavailableError],
    ['Platform failure: DBus error: The name org.freedesktop.secrets was not provided by any .service files', KeyringUnavailableError],
    ["Couldn't access platform storage: Secret Service: unlock prompt was dismissed", KeyringFailedError],
    ['zbus error: org.freedesktop.Secret.Error.IsLocked: Cannot get secret of a locked object', KeyringFailedError],
    ['Platform failure: The user name or passphrase you entered is not correct.', KeyringFailedError],
    ['Entry is matched by 2 credentials: ambiguous', KeyringFailedError],
  ];
  for (const [message, kind] of cases) {
    const sorted = classifyKeyringError(new Error(message));
    expect(sorted).toBeInstanceOf(kind as never);
    expect(sorted.message).not.toMatch(/^(Platform failure: DBus|Couldn't access platform storage)/);
  }
});
