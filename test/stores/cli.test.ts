/*
 * `execgate secret|encrypt|vault` through commander with fake streams. The OS keyring is
 * switched off here (EXECGATE_KEYRING=off) so these in-process tests can never touch a real
 * keyring; keyring.test.ts drives the same commands against a private Secret Service.
 */
import { PassThrough, Readable, Writable } from 'node:stream';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command } from 'commander';
import { CliExit } from '../../src/cli/io';
import { findSecretSource, registerSecretCommands, type CliIo } from '../../src/cli/commands/secret';
import { ExecgateError } from '../../src/errors';
import { Vault } from '../../src/stores';
import { makeTempDir } from '../helpers/tmp';

const VALUE = 'cli-secret-value-93c1f0';

let temp: { dir: string; cleanup: () => void };
let home: string;
const allOutput: string[] = [];

beforeEach(() => {
  temp = makeTempDir('execgate-cli-');
  home = join(temp.dir, 'home');
});
afterEach(() => temp.cleanup());
afterAll(() => {
  // No command ever printed a value, whatever it did.
  for (const text of allOutput) expect(text).not.toContain(VALUE);
});

function sink(): { stream: Writable; text: () => string } {
  const chunks: Buffer[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      chunks.push(Buffer.from(chunk));
      callback();
    },
  });
  return { stream, text: () => Buffer.concat(chunks).toString('utf8') };
}

interface CliRun {
  stdout: string;
  stderr: string;
  error?: unknown;
}

async function cli(
  args: string[],
  options: { stdin?: string | Buffer | NodeJS.ReadableStream; env?: NodeJS.ProcessEnv; program?: Command } = {},
): Promise<CliRun> {
  const stdout = sink();
  const stderr = sink();
  const input = options.stdin ?? '';
  const io: CliIo = {
    stdin: typeof input === 'string' || Buffer.isBuffer(input) ? Readable.from([Buffer.from(input)]) : input,
    stdout: stdout.stream,
    stderr: stderr.stream,
    env: { EXECGATE_HOME: home, EXECGATE_KEYRING: 'off', ...options.env },
  };
  const program = options.program ?? new Command();
  program.exitOverride().configureOutput({ writeOut: (text) => stdout.stream.write(text), writeErr: (text) => stderr.stream.write(text) });
  registerSecretCommands(program, io);
  let error: unknown;
  try {
    await program.parseAsync(args, { from: 'user' });
  } catch (caught) {
    error = caught;
  }
  const run = { stdout: stdout.text(), stderr: stderr.text(), error };
  allOutput.push(run.stdout, run.stderr, error instanceof Error ? error.message : '');
  return run;
}

function codeOf(run: CliRun): string | undefined {
  return run.error instanceof ExecgateError ? run.error.code : undefined;
}

const vault = () => new Vault({ home, env: {}, keyring: false });

describe('secret set', () => {
  test('reads stdin, strips exactly one trailing newline, stores in the vault when no keyring', async () => {
    const run = await cli(['secret', 'set', 'db-password'], { stdin: `${VALUE}\n` });
    expect(run.error).toBeUndefined();
    expect(run.stdout).toBe('db-password: stored in the vault\n');
    expect(await vault().get('secret', 'db-password')).toBe(VALUE);

    await cli(['secret', 'set', 'two-newlines', '--store', 'vault'], { stdin: `${VALUE}\n\n` });
    expect(await vault().get('secret', 'two-newlines')).toBe(`${VALUE}\n`);
    await cli(['secret', 'set', 'crlf'], { stdin: `${VALUE}\r\n` });
    expect(await vault().get('secret', 'crlf')).toBe(VALUE);
    await cli(['secret', 'set', 'no-newline'], { stdin: VALUE });
    expect(await vault().get('secret', 'no-newline')).toBe(VALUE);
    await cli(['secret', 'set', 'multi/line.v2'], { stdin: `line one\nline two ${VALUE}\n` });
    expect(await vault().get('secret', 'multi/line.v2')).toBe(`line one\nline two ${VALUE}`);
  });

  test('refuses empty, NUL-bearing and non-UTF-8 values, and stores nothing', async () => {
    for (const stdin of ['', '\n', '\r\n', Buffer.from('ab\0cd'), Buffer.from([0xff, 0xfe, 0x41])]) {
      const run = await cli(['secret', 'set', 'bad'], { stdin });
      expect(codeOf(run)).toBe('EXECGATE_ERR_SECRET_VALUE_INVALID');
    }
    expect(await vault().exists()).toBe(false);
  });

  test('refuses invalid names and a value given as an argument', async () => {
    for (const name of ['-rf', '.hidden', 'a b', 'x'.repeat(129), '__vault_key__/x']) {
      const run = await cli(['secret', 'set', '--', name], { stdin: VALUE });
      expect(codeOf(run)).toBe('EXECGATE_ERR_SECRET_NAME_INVALID');
    }
    const run = await cli(['secret', 'set', 'name', VALUE], { stdin: VALUE });
    expect(run.error).toMatchObject({ code: 'commander.excessArguments' });
    expect(await vault().exists()).toBe(false);
  });

  test('--store keyring without a keyring: EXECGATE_ERR_KEYRING_UNAVAILABLE before reading the value', async () => {
    const run = await cli(['secret', 'set', 'token', '--store', 'keyring'], { stdin: VALUE });
    expect(codeOf(run)).toBe('EXECGATE_ERR_KEYRING_UNAVAILABLE');
    expect((run.error as Error).message).toContain('EXECGATE_KEYRING=off');
    expect(await vault().exists()).toBe(false);
    expect((await cli(['secret', 'set', 'token', '--store', 'nowhere'], { stdin: VALUE })).error).toMatchObject({ code: 'commander.invalidArgument' });
  });

  test('says so when an earlier source shadows the stored value', async () => {
    const run = await cli(['secret', 'set', 'api-token'], { stdin: VALUE, env: { EXECGATE_SECRET_API_TOKEN: 'from-env-1234' } });
    expect(run.stdout).toBe('api-token: stored in the vault\n');
    expect(run.stderr).toContain('<<secret:api-token>> resolves from env (EXECGATE_SECRET_API_TOKEN), which is checked before the vault');
    expect(run.stderr).not.toContain('from-env-1234');
  });
});

describe('secret set from a terminal', () => {
  function fakeTty(keys: string[]): PassThrough & { isTTY: boolean; setRawMode: jest.Mock } {
    const stream = Object.assign(new PassThrough(), { isTTY: true, setRawMode: jest.fn() });
    // Keys arrive one by one once the command listens, as typing does.
    stream.setRawMode.mockImplementation((on: boolean) => {
      if (on) keys.forEach((key, index) => setTimeout(() => stream.write(key), index * 2));
      return stream;
    });
    return stream;
  }

  test('reads one line with echo off; backspace edits; the value is not echoed', async () => {
    const tty = fakeTty(['cli-', 'secret-vaX', '\u007f', 'lue-93c1f0', '\r']);
    const run = await cli(['secret', 'set', 'typed'], { stdin: tty });
    expect(run.error).toBeUndefined();
    expect(tty.setRawMode.mock.calls).toEqual([[true], [false]]);
    expect(run.stderr).toBe('Value for <<secret:typed>> (input hidden, Enter to finish): \n');
    expect(await vault().get('secret', 'typed')).toBe(VALUE);
  });

  test('Ctrl-C cancels and stores nothing', async () => {
    const run = await cli(['secret', 'set', 'typed'], { stdin: fakeTty(['abc', '\u0003']) });
    expect(codeOf(run)).toBe('EXECGATE_ERR_CLI_USAGE');
    expect(await vault().exists()).toBe(false);
  });
});

describe('secret list, rm, test', () => {
  test('list shows names and stores, never values (text and --json)', async () => {
    await cli(['secret', 'set', 'beta'], { stdin: VALUE });
    await cli(['secret', 'set', 'alpha'], { stdin: VALUE });
    const encrypted = await cli(['encrypt', '--label', 'deploy key'], { stdin: VALUE });
    const id = /<<decrypt:([0-9a-f]{32})>>/.exec(encrypted.stdout)![1]!;

    const text = await cli(['secret', 'list']);
    expect(text.stdout).toBe(
      [`vault    <<decrypt:${id}>>  deploy key`, 'vault    <<secret:alpha>>', 'vault    <<secret:beta>>', ''].join('\n'),
    );
    expect(text.stderr).toContain('keyring unavailable: switched off by EXECGATE_KEYRING=off');

    const json = JSON.parse((await cli(['secret', 'list', '--json'])).stdout);
    expect(json.keyring).toEqual({ available: false, reason: 'switched off by EXECGATE_KEYRING=off' });
    expect(json.entries).toEqual([
      { kind: 'decrypt', name: id, store: 'vault', label: 'deploy key' },
      { kind: 'secret', name: 'alpha', store: 'vault' },
      { kind: 'secret', name: 'beta', store: 'vault' },
    ]);
    const empty = await cli(['secret', 'list'], { env: { EXECGATE_HOME: join(temp.dir, 'other') } });
    expect(empty.stdout).toBe('');
    expect(empty.stderr).toContain('no secrets stored');
  });

  test('rm removes from the vault; an unknown name is EXECGATE_ERR_SECRET_NOT_FOUND', async () => {
    await cli(['secret', 'set', 'gone-soon'], { stdin: VALUE });
    const run = await cli(['secret', 'rm', 'gone-soon']);
    expect(run.stdout).toBe('gone-soon: removed from the vault\n');
    expect(await vault().get('secret', 'gone-soon')).toBeUndefined();
    expect(codeOf(await cli(['secret', 'rm', 'gone-soon']))).toBe('EXECGATE_ERR_SECRET_NOT_FOUND');
    expect(codeOf(await cli(['secret', 'rm', 'never-was', '--store', 'vault']))).toBe('EXECGATE_ERR_SECRET_NOT_FOUND');
    expect(codeOf(await cli(['secret', 'rm', 'never-was', '--store', 'keyring']))).toBe('EXECGATE_ERR_KEYRING_UNAVAILABLE');
  });

  test('test says where a name resolves from (env before vault), exit 1 when nowhere', async () => {
    await cli(['secret', 'set', 'db.password'], { stdin: VALUE });
    let run = await cli(['secret', 'test', 'db.password']);
    expect(run.stdout).toBe('db.password: resolves from vault\n');
    expect(run.error).toBeUndefined();

    run = await cli(['secret', 'test', 'db.password'], { env: { EXECGATE_SECRET_DB_PASSWORD: 'env-value-5678' } });
    expect(run.stdout).toBe('db.password: resolves from env (EXECGATE_SECRET_DB_PASSWORD)\n');

    run = await cli(['secret', 'test', 'missing-name']);
    expect(run.error).toBeInstanceOf(CliExit);
    expect((run.error as CliExit).status).toBe(1);
    expect(run.stdout).toBe(
      'missing-name: not found (checked env, keyring (unavailable: switched off by EXECGATE_KEYRING=off), vault); <<secret:missing-name>> would stay literal\n',
    );
  });

  test('test fails with the vault error when the vault cannot be verified', async () => {
    await cli(['secret', 'set', 'db'], { stdin: VALUE });
    const path = join(home, 'vault.json');
    const document = JSON.parse(readFileSync(path, 'utf8'));
    document.entries = [];
    require('node:fs').writeFileSync(path, JSON.stringify(document));
    expect(codeOf(await cli(['secret', 'test', 'other']))).toBe('EXECGATE_ERR_VAULT_TAMPERED');
  });

  test('findSecretSource checks env, keyring, vault in that order', async () => {
    await vault().set('shared', VALUE);
    const keyring = { service: 'fake', get: async (name: string) => (name === 'in-keyring' || name === 'shared' ? 'k-value' : null) } as never;
    const options = { env: { EXECGATE_SECRET_SHARED: 'e-value' }, home, keyring, vault: vault() };
    expect(await findSecretSource('shared', options)).toEqual({ source: 'env', variable: 'EXECGATE_SECRET_SHARED' });
    expect(await findSecretSource('shared', { ...options, env: {} })).toEqual({ source: 'keyring', service: 'fake' });
    expect(await findSecretSource('shared', { ...options, env: {}, keyring: false })).toEqual({ source: 'vault', path: join(home, 'vault.json') });
    expect(await findSecretSource('nowhere', { ...options, env: {} })).toBeUndefined();
  });
});

describe('encrypt and vault rotate-key', () => {
  test('encrypt prints the token; the blob decrypts to the value', async () => {
    const run = await cli(['encrypt'], { stdin: `${VALUE}\n` });
    expect(run.stdout).toMatch(/^<<decrypt:[0-9a-f]{32}>>\n$/);
    const id = run.stdout.slice('<<decrypt:'.length, -'>>\n'.length);
    expect(await vault().get('decrypt', id)).toBe(VALUE);
    expect(codeOf(await cli(['encrypt'], { stdin: '' }))).toBe('EXECGATE_ERR_SECRET_VALUE_INVALID');
    expect(codeOf(await cli(['encrypt', '--label', 'x\u0007'], { stdin: VALUE }))).toBe('EXECGATE_ERR_SECRET_NAME_INVALID');
  });

  test('rotate-key re-encrypts everything; the old key stops working', async () => {
    expect((await cli(['vault', 'rotate-key'])).stdout).toContain('nothing to rotate');
    await cli(['secret', 'set', 'one'], { stdin: VALUE });
    const blob = (await cli(['encrypt'], { stdin: VALUE })).stdout.trim();
    const oldKey = readFileSync(join(home, 'vault.key'), 'utf8').trim();
    const run = await cli(['vault', 'rotate-key']);
    expect(run.error).toBeUndefined();
    expect(run.stdout).toMatch(/^Rotated the vault key: 2 entries re-encrypted \(key id [0-9a-f]{12} -> [0-9a-f]{12}\); the new key is in the key file .*vault\.key\.\n$/);
    expect(await vault().get('secret', 'one')).toBe(VALUE);
    expect(await vault().get('decrypt', blob.slice(10, -2))).toBe(VALUE);
    const stale = await cli(['secret', 'test', 'one'], { env: { EXECGATE_VAULT_KEY: oldKey } });
    expect(codeOf(stale)).toBe('EXECGATE_ERR_VAULT_WRONG_KEY');
    expect(codeOf(await cli(['vault', 'rotate-key'], { env: { EXECGATE_VAULT_KEY: oldKey } }))).toBe('EXECGATE_ERR_VAULT_KEY_EXTERNAL');
  });

  test('joins an existing `vault` command group instead of adding a second one', async () => {
    const program = new Command();
    program.command('vault').description('owned elsewhere').command('status').action(() => undefined);
    await cli(['vault', 'rotate-key'], { program });
    const groups = program.commands.filter((command) => command.name() === 'vault');
    expect(groups).toHaveLength(1);
    expect(groups[0]!.commands.map((command) => command.name()).sort()).toEqual(['rotate-key', 'status']);
  });
});
