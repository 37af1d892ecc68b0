/*
 * A CLI that explains itself: help where a person asks for it (exit 0, on stdout), usage
 * errors with status 2 that name the help of the command they belong to, exit statuses
 * documented.
 */
import { makeTempDir } from '../helpers/tmp';
import { execgateSync } from './helpers';

let tmp: ReturnType<typeof makeTempDir>;
beforeAll(() => { tmp = makeTempDir('execgate-cli-help-'); });
afterAll(() => tmp.cleanup());

const cli = (args: string[]) => execgateSync(args, { cwd: tmp.dir });

describe('help', () => {
  test.each([
    [[], 'Usage: execgate [options] [command]'],
    [['secret'], 'Usage: execgate secret [options] [command]'],
    [['audit'], 'Usage: execgate audit [options] [command]'],
    [['vault'], 'Usage: execgate vault [options] [command]'],
    [['policy'], 'Usage: execgate policy [options] [command]'],
    [['help', 'secret'], 'Usage: execgate secret [options] [command]'],
    [['run', '--help'], 'Usage: execgate run [options] -- COMMAND'],
  ])('`execgate %j` prints its help on stdout and exits 0', (args, usage) => {
    const result = cli(args as string[]);
    expect(result.stderr).toBe('');
    expect(result.status).toBe(0);
    expect(result.stdout.startsWith(usage)).toBe(true);
    expect(result.stdout).not.toContain('outputHelp');
  });

  test('the top-level help documents every exit status', () => {
    const { stdout } = cli(['--help']);
    for (const line of [/^ {2}0 {4}success/m, /^ {2}1 {4}a check said no/m, /^ {2}2 {4}the command line is not valid/m, /^ {2}124 {2}/m, /^ {2}125 {2}execgate refused or failed/m]) {
      expect(stdout).toMatch(line);
    }
  });

  test('--version prints the version and exits 0', () => {
    const result = cli(['--version']);
    expect(result.status).toBe(0);
    expect(result.stdout).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('usage errors: exit 2, one coded line naming the right help', () => {
  test.each([
    [['frobnicate'], "unknown command 'frobnicate'", 'execgate --help'],
    [['secret', 'frob'], "unknown command 'frob'", 'execgate secret --help'],
    [['run'], "missing required argument 'command'", 'execgate run --help'],
    [['run', '--bogus', '--', 'true'], "unknown option '--bogus'", 'execgate run --help'],
    [['secret', 'set'], "missing required argument 'name'", 'execgate secret set --help'],
    [['run', '--env', 'NOEQUALS', '--', 'true'], 'Expected --env KEY=VALUE', 'execgate run --help'],
    [['audit', 'report', '--html', 'r.html', '--limit', '0'], 'Expected `--limit` to be a positive integer', 'execgate audit report --help'],
    [['mcp', '--port', '80'], 'apply to --http only', 'execgate mcp --help'],
    [['policy', 'init', '--from', 'lax', 'x.yaml'], "argument 'lax' is invalid", 'execgate policy init --help'],
  ])('%j', (args, what, help) => {
    const result = cli(args as string[]);
    expect(result.status).toBe(2);
    expect(result.stdout).toBe('');
    const lines = result.stderr.trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^execgate: EXECGATE_ERR_CLI_USAGE: /);
    expect(lines[0]).toContain(what);
    expect(lines[0]).toContain(`(see \`${help}\`)`);
  });

  test('a refusal of execgate itself stays 125, distinct from a usage error', () => {
    const result = cli(['run', '--timeout', 'soon', '--', 'true']);
    expect(result.status).toBe(125);
    expect(result.stderr).toMatch(/^execgate: EXECGATE_ERR_INVALID_TIMEOUT: /);
  });
});
