/*
 * End to end: runs through the real gateway (a secret reference, encoded output, a failure, a
 * timeout, a policy denial, a rejected request, an injection attempt) and a secret stored from
 * the CLI, then the built CLI reviews what they wrote: verify, search, show, stats, report.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { expectNoLeak } from '../helpers/leak';
import { makeTempDir } from '../helpers/tmp';
import { execgate, INJECTED_COMMAND, readRecords, runScenario, SECRET_VALUE, type Scenario } from './helpers';

let tmp: ReturnType<typeof makeTempDir>;
let home: string;
let scenario: Scenario;
const STORED_VALUE = 'stored-from-cli-value-8842';
/** Everything any review command printed, checked for values at the end. */
const surfaces: string[] = [];

function cli(args: string[], input?: string): { status: number | null; stdout: string; stderr: string } {
  const result = input === undefined
    ? execgate(args, home)
    : require('node:child_process').spawnSync(process.execPath, [join(__dirname, '..', '..', 'dist', 'cli', 'main.js'), ...args], {
      cwd: home, input, encoding: 'utf8', env: { PATH: process.env.PATH, HOME: home, EXECGATE_KEYRING: 'off', EXECGATE_HOME: home },
    });
  surfaces.push(result.stdout, result.stderr);
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function searchRuns(args: string[]): string[] {
  const result = cli(['audit', 'search', '--json', ...args]);
  expect(result.status).toBe(0);
  const ids = result.stdout.split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { runId?: string }).runId ?? '-');
  return [...new Set(ids)];
}

beforeAll(async () => {
  tmp = makeTempDir('execgate-audit-e2e-');
  home = tmp.dir;
  scenario = await runScenario(home);
  expect(cli(['secret', 'set', 'stored', '--store', 'vault'], STORED_VALUE).status).toBe(0);
  expect(cli(['secret', 'rm', 'stored']).status).toBe(0);
}, 30_000);
afterAll(() => tmp.cleanup());

test('the records: one chain, the runs\' stories, names and fingerprints but no value in any spelling', () => {
  const text = readFileSync(join(home, 'audit.log'), 'utf8');
  expectNoLeak(text, [SECRET_VALUE, STORED_VALUE]);
  const records = readRecords(join(home, 'audit.log'));
  records.forEach((record, index) => expect(record).toMatchObject({ v: 1, seq: index + 1 }));
  const of = (runId: string) => records.filter((record) => record.runId === runId).map((record) => record.event);
  expect(of(scenario.ok)).toEqual(['exec.request', 'exec.started', 'exec.finished']);
  expect(of(scenario.denied)).toEqual(['exec.request', 'exec.denied']);
  const started = records.find((record) => record.runId === scenario.ok && record.event === 'exec.started')!;
  expect(started.refs).toEqual([{ kind: 'secret', id: 'x', ref: '<<secret:x>>', found: true, source: 'env', fingerprint: expect.stringMatching(/^hmac-sha256:[0-9a-f]{32}$/) }]);
  expect((started.env as { withheld: string[] }).withheld).toContain('EXECGATE_SECRET_X');
  const denied = records.find((record) => record.event === 'exec.denied')!;
  expect(denied).toMatchObject({ rule: 'no-network', reason: 'network tools are not allowed', code: 'EXECGATE_ERR_POLICY_DENIED' });
  expect(records.filter((record) => record.event === 'secret.set')).toEqual([
    expect.objectContaining({ kind: 'secret', name: 'stored', store: 'vault', actor: expect.stringMatching(/^cli:/) }),
  ]);
  expect(records.filter((record) => record.event === 'secret.removed')).toEqual([expect.objectContaining({ name: 'stored', stores: ['vault'] })]);
});

test('verify: intact', () => {
  const result = cli(['audit', 'verify']);
  expect(result.stdout).toContain('OK: the chain is intact');
  expect(result.status).toBe(0);
});

test('search: a table with time, run, actor, decision, exit, duration, command; control characters made visible', () => {
  const result = cli(['audit', 'search']);
  expect(result.status).toBe(0);
  const lines = result.stdout.trimEnd().split('\n');
  expect(lines[0]).toMatch(/^TIME\s+RUN\s+ACTOR\s+DECISION\s+EXIT\s+DURATION\s+COMMAND$/);
  const row = (runId: string) => lines.find((line) => line.includes(runId)) ?? '';
  expect(row(scenario.ok)).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\dT[\\d:.]+Z ${scenario.ok}\\s+mcp:claude/session-1\\s+allowed\\s+0\\s+(\\d+ms|\\d+\\.\\ds)\\s+echo "token=<<secret:x>>"$`));
  expect(row(scenario.exit3)).toMatch(/tool:run_bash\s+allowed\s+3\s+/);
  expect(row(scenario.timedOut)).toMatch(/allowed\s+timeout\s+/);
  expect(row(scenario.denied)).toMatch(/denied\s+-\s+-\s+curl -H "Authorization: <<secret:x>>" https:\/\/example.com$/);
  expect(lines.some((line) => /rejected\s+-\s+-\s+true$/.test(line))).toBe(true);
  expect(row(scenario.injected)).toContain('\\x1b[2J\\x1b[31mfake\\u{202e}');
  expect(result.stdout).not.toContain('\x1b');
  expect(result.stdout).not.toContain('\u202e');
  expect(lines.some((line) => line.includes('secret.set') && line.includes('name=stored'))).toBe(true);
});

test('search filters: --denied, --failed, --ref, --command, --event, --actor, --since/--until, and JSON lines as stored', () => {
  expect(searchRuns(['--denied'])).toEqual([scenario.denied]);
  const failed = searchRuns(['--failed']);
  expect(failed).toHaveLength(3);
  expect(failed).toEqual(expect.arrayContaining([scenario.exit3, scenario.timedOut]));
  expect(searchRuns(['--ref', 'x'])).toEqual([scenario.ok, scenario.encoded, scenario.denied]);
  expect(searchRuns(['--ref', '<<secret:x>>', '--failed'])).toEqual([]);
  expect(searchRuns(['--ref', '<<secret:x>>', '--denied'])).toEqual([scenario.denied]);
  expect(searchRuns(['--command', '^sleep '])).toEqual([scenario.timedOut]);
  expect(searchRuns(['--event', 'exec.denied,exec.rejected'])).toHaveLength(2);
  expect(searchRuns(['--actor', 'session-1', '--event', 'exec.finished'])).toEqual([scenario.ok, scenario.encoded]);
  expect(searchRuns(['--since', '2999-01-01'])).toEqual([]);
  expect(searchRuns(['--until', '2000-01-01'])).toEqual([]);
  expect(searchRuns(['--since', '1h', '--denied'])).toEqual([scenario.denied]);
  // --json prints the stored lines byte for byte.
  const stored = readFileSync(join(home, 'audit.log'), 'utf8').split('\n').filter((line) => line.includes(`"runId":"${scenario.ok}"`));
  expect(cli(['audit', 'search', '--json', '--command', '^echo "token']).stdout).toBe(`${stored.join('\n')}\n`);
  const bad = cli(['audit', 'search', '--since', 'yesterday-ish']);
  expect(bad.status).toBe(2);
  expect(bad.stderr).toMatch(/^execgate: EXECGATE_ERR_CLI_USAGE: Expected `--since` to be an ISO date.*\(see `execgate audit search --help`\)$/m);
});

test('show: the whole story of one run; unknown run id is a coded error', () => {
  const result = cli(['audit', 'show', scenario.ok]);
  expect(result.status).toBe(0);
  expect(result.stdout).toContain(`run       ${scenario.ok}`);
  expect(result.stdout).toContain('actor     mcp:claude/session-1');
  expect(result.stdout).toContain('decision  allowed (rule rules.default)');
  expect(result.stdout).toMatch(/ref {7}<<secret:x>> from env, value hmac-sha256:[0-9a-f]{32}/);
  expect(result.stdout).toContain('withheld  EXECGATE_SECRET_X');
  expect(result.stdout).toMatch(/exec\.request\n.*exec\.started\n.*exec\.finished {2}exitCode=0/);
  const denied = cli(['audit', 'show', scenario.denied]);
  expect(denied.stdout).toContain('decision  denied (rule no-network): network tools are not allowed');
  const json = cli(['audit', 'show', '--json', scenario.timedOut]);
  expect(json.stdout.trim().split('\n').map((line) => (JSON.parse(line) as { event: string }).event)).toEqual(['exec.request', 'exec.started', 'exec.finished']);
  const missing = cli(['audit', 'show', 'run_nope']);
  expect(missing.status).toBe(125);
  expect(missing.stderr).toMatch(/^execgate: EXECGATE_ERR_AUDIT_NOT_FOUND: No audit record names the run `run_nope`/);
});

test('stats: counts by event, decision and exit status, top commands, secrets by name', () => {
  const result = cli(['audit', 'stats', '--json']);
  expect(result.status).toBe(0);
  const stats = JSON.parse(result.stdout);
  expect(stats.runs).toBe(7);
  expect(stats.decisions).toEqual({ allowed: 5, denied: 1, rejected: 1 });
  expect(stats.exits).toMatchObject({ '0': 3, '3': 1, timeout: 1, '-': 2 });
  expect(stats.events).toMatchObject({ 'exec.request': 6, 'exec.denied': 1, 'exec.rejected': 1, 'exec.finished': 5, 'gateway.started': 1, 'secret.set': 1 });
  expect(stats.secrets).toEqual([expect.objectContaining({ ref: '<<secret:x>>', name: 'x', runs: 3, denied: 1, found: 2, sources: { env: 2 }, fingerprints: 1 })]);
  expect(stats.topCommands).toHaveLength(7);
  const text = cli(['audit', 'stats', '--since', '1d']);
  expect(text.stdout).toMatch(/by decision:\n\s+5 {2}allowed\n\s+1 {2}denied\n\s+1 {2}rejected/);
  expect(text.stdout).toMatch(/secrets used \(by name\):\n\s+3 {2}<<secret:x>> {2}found 2, not found 0, denied 1, rejected 0, from env 2, 1 distinct value\(s\)/);
});

test('report: a self-contained page with every run embedded, the chain verdict, everything from the log escaped', () => {
  const out = join(home, 'report.html');
  const result = cli(['audit', 'report', '--html', out]);
  expect(result.status).toBe(0);
  expect(result.stdout).toBe(`${out}: 7 run(s), 1 denied; chain intact\n`);
  const html = readFileSync(out, 'utf8');
  surfaces.push(html);
  expect(html).toContain('Chain verified: ');
  const data = JSON.parse(/<script type="application\/json" id="execgate-data">(.*?)<\/script>/s.exec(html)![1]!) as {
    strings: string[]; runs: { i: string; d: string; o: number; c: number }[]; secrets: { ref: string; denied: number; allowed: number }[];
  };
  expect(data.runs.map((run) => run.i)).toEqual(expect.arrayContaining([scenario.ok, scenario.denied, scenario.exit3, scenario.injected]));
  expect(data.runs.find((run) => run.i === scenario.denied)).toMatchObject({ d: 'denied', o: 1 });
  expect(data.runs.find((run) => run.i === scenario.exit3)).toMatchObject({ d: 'allowed', o: 2 });
  expect(data.strings[data.runs.find((run) => run.i === scenario.injected)!.c]).toBe(INJECTED_COMMAND);
  expect(data.secrets).toEqual([expect.objectContaining({ ref: '<<secret:x>>', denied: 1, allowed: 2 })]);
  expect(html).not.toMatch(/<script>document/i);
  expect(html).not.toContain('<img');
  expect(html).not.toContain('<b>evil</b>');
  expect(html).toContain("default-src 'none'");
  expect(INJECTED_COMMAND).toContain('<script>');
});

test('nothing any review command printed holds a value', () => {
  expectNoLeak(surfaces.join('\n'), [SECRET_VALUE, STORED_VALUE]);
});
