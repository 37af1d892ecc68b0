import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { normalizeRequest, MAX_COMMAND_BYTES } from '../../src/plan/options';
import { DEFAULT_POLICY } from '../../src/policy/effective';
import { baseEnv, makeTempDir } from '../helpers/tmp';

let tmp: ReturnType<typeof makeTempDir>;
let gateway: Gateway;
let marker: string;

beforeEach(() => {
  tmp = makeTempDir();
  marker = join(tmp.dir, 'ran');
  gateway = createGateway({ home: join(tmp.dir, 'home'), env: baseEnv(), cwd: tmp.dir });
});
afterEach(async () => {
  await gateway.close();
  tmp.cleanup();
});

// Each bad request carries a command that would leave a marker file if anything ran.
const run = (): string => `touch ${marker}`;

const cases: Array<[string, () => unknown, string, RegExp]> = [
  ['not an object', () => 'echo hi', 'EXECGATE_ERR_INVALID_REQUEST', /Expected the request to be an object/],
  ['null request', () => null, 'EXECGATE_ERR_INVALID_REQUEST', /got `null`/],
  ['missing command', () => ({}), 'EXECGATE_ERR_INVALID_COMMAND', /non-empty string, got a value of type undefined/],
  ['non-string command', () => ({ command: 42 }), 'EXECGATE_ERR_INVALID_COMMAND', /got `42` \(number\)/],
  ['array command', () => ({ command: ['ls'] }), 'EXECGATE_ERR_INVALID_COMMAND', /got an array/],
  ['empty command', () => ({ command: '' }), 'EXECGATE_ERR_INVALID_COMMAND', /non-empty/],
  ['whitespace command', () => ({ command: '  \n ' }), 'EXECGATE_ERR_INVALID_COMMAND', /non-empty/],
  ['NUL in command', () => ({ command: `${run()}\0; echo` }), 'EXECGATE_ERR_COMMAND_NUL', /NUL byte at index/],
  ['command too long', () => ({ command: `${run()}; #${'x'.repeat(MAX_COMMAND_BYTES)}` }), 'EXECGATE_ERR_COMMAND_TOO_LONG', /at most 131071 bytes/],
  ['unknown option', () => ({ command: run(), timout: 5 }), 'EXECGATE_ERR_UNKNOWN_OPTION', /Unknown option `timout`/],
  ['unknown mode', () => ({ command: run(), mode: 'turbo' }), 'EXECGATE_ERR_INVALID_MODE', /one of `sync`, `pty`, `background`, got `"turbo"`/],
  ['negative timeout', () => ({ command: run(), timeout: -1 }), 'EXECGATE_ERR_INVALID_TIMEOUT', /got `-1` \(number\)/],
  ['NaN timeout', () => ({ command: run(), timeout: Number.NaN }), 'EXECGATE_ERR_INVALID_TIMEOUT', /NaN/],
  ['infinite timeout', () => ({ command: run(), timeout: Infinity }), 'EXECGATE_ERR_INVALID_TIMEOUT', /Infinity/],
  ['string timeout', () => ({ command: run(), timeout: '5' }), 'EXECGATE_ERR_INVALID_TIMEOUT', /string/],
  ['env not an object', () => ({ command: run(), env: 'A=1' }), 'EXECGATE_ERR_INVALID_ENV', /object of strings/],
  ['env array', () => ({ command: run(), env: ['A=1'] }), 'EXECGATE_ERR_INVALID_ENV', /an array/],
  ['non-string env value', () => ({ command: run(), env: { PORT: 8080 } }), 'EXECGATE_ERR_INVALID_ENV', /`env.PORT` to be a string, got `8080`/],
  ['env name with =', () => ({ command: run(), env: { 'A=B': 'x' } }), 'EXECGATE_ERR_INVALID_ENV', /invalid variable name/],
  ['env value with NUL', () => ({ command: run(), env: { A: 'x\0y' } }), 'EXECGATE_ERR_INVALID_ENV', /NUL/],
  ['env variable longer than MAX_ARG_STRLEN', () => ({ command: run(), env: { BIG: 'x'.repeat(200_000) } }), 'EXECGATE_ERR_INVALID_ENV', /`env.BIG` is 200004 bytes as `NAME=value`; Linux accepts at most 131071 bytes in one environment variable/],
  ['env larger than ARG_MAX in all', () => ({ command: run(), env: Object.fromEntries(Array.from({ length: 300 }, (_, i) => [`V${i}`, 'y'.repeat(100_000)])) }), 'EXECGATE_ERR_INVALID_ENV', /The `env` option is \d+ bytes in 300 variables; Linux accepts at most \d+ bytes of arguments and environment/],
  ['cwd not a string', () => ({ command: run(), cwd: 7 }), 'EXECGATE_ERR_INVALID_CWD', /non-empty string/],
  ['relative shell', () => ({ command: run(), shell: 'bash' }), 'EXECGATE_ERR_INVALID_SHELL', /absolute path/],
  ['missing shell', () => ({ command: run(), shell: '/nonexistent/sh' }), 'EXECGATE_ERR_INVALID_SHELL', /not an executable file/],
  ['negative grace', () => ({ command: run(), grace: -5 }), 'EXECGATE_ERR_INVALID_OPTION', /`grace`/],
  ['tiny maxOutput', () => ({ command: run(), maxOutput: 10 }), 'EXECGATE_ERR_INVALID_OPTION', /`maxOutput`/],
  ['bad envMode', () => ({ command: run(), envMode: 'append' }), 'EXECGATE_ERR_INVALID_OPTION', /`envMode`/],
  ['pty option on a sync run', () => ({ command: run(), pty: true }), 'EXECGATE_ERR_INVALID_OPTION', /`pty` option applies to `background` runs/],
  ['bad terminal size', () => ({ command: run(), mode: 'pty', cols: 0 }), 'EXECGATE_ERR_INVALID_OPTION', /`cols`/],
  ['bad ansi', () => ({ command: run(), mode: 'pty', ansi: 'remove' }), 'EXECGATE_ERR_INVALID_OPTION', /`ansi`/],
  ['non-string epilogue', () => ({ command: run(), epilogue: 5 }), 'EXECGATE_ERR_INVALID_OPTION', /`epilogue`/],
];

describe('bad input is a coded error and nothing runs', () => {
  test.each(cases)('%s', async (_name, make, code, message) => {
    const error = await gateway.exec(make() as never).then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toMatchObject({ code });
    expect((error as Error).message).toMatch(message);
    expect(existsSync(marker)).toBe(false);
  });

  test('one env variable may be exactly MAX_ARG_STRLEN - 1 bytes as NAME=value, and real bash receives it', async () => {
    const defaults = { cwd: '/', shell: '/bin/sh', policy: DEFAULT_POLICY };
    const fits = 'v'.repeat(MAX_COMMAND_BYTES - 'BIG='.length);
    expect(() => normalizeRequest({ command: 'true', env: { BIG: fits } }, defaults)).not.toThrow();
    expect(() => normalizeRequest({ command: 'true', env: { BIG: `${fits}v` } }, defaults)).toThrow(/131071/);
    const result = await gateway.exec({ command: 'printf %s "${#BIG}"', env: { BIG: fits } });
    expect(result.stdout).toBe(String(fits.length));
  });

  test('the command-length limit is exactly MAX_ARG_STRLEN - 1', () => {
    const defaults = { cwd: '/', shell: '/bin/sh', policy: DEFAULT_POLICY };
    expect(() => normalizeRequest({ command: 'x'.repeat(MAX_COMMAND_BYTES) }, defaults)).not.toThrow();
    expect(() => normalizeRequest({ command: 'x'.repeat(MAX_COMMAND_BYTES + 1) }, defaults)).toThrow(/131071/);
  });

  test('a prototype-polluted option is not picked up', () => {
    const proto = { timeout: -1 };
    const request = Object.create(proto);
    request.command = 'true';
    const normalized = normalizeRequest(request, { cwd: '/', shell: '/bin/sh', policy: DEFAULT_POLICY });
    expect(normalized.timeout).toBe(DEFAULT_POLICY.modes.sync.defaultTimeout);
  });

  test('timeouts above the policy maximum are clamped to it; 0 means the maximum', () => {
    const defaults = { cwd: '/', shell: '/bin/sh', policy: DEFAULT_POLICY };
    const max = DEFAULT_POLICY.modes.sync.maxTimeout;
    expect(normalizeRequest({ command: 'true', timeout: max * 10 }, defaults).timeout).toBe(max);
    expect(normalizeRequest({ command: 'true', timeout: 0 }, defaults).timeout).toBe(max);
    expect(normalizeRequest({ command: 'true', timeout: 1500.2 }, defaults).timeout).toBe(1501);
  });
});
