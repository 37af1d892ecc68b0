/*
 * Review of what the writers really write: one list of event types (src/audit/events.ts) that
 * every writer in src/ must stay within, background runs that end three ways read back by
 * show/search/stats, gateway lifecycle rows left out of search, and denied and rejected
 * requests found by the reference they named.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { AUDIT_EVENTS, getEventRole, isAuditEventName } from '../../src/audit/events';
import { RunAssembler, type RunSummary } from '../../src/audit/runs';
import { makeTempDir } from '../helpers/tmp';
import { execgate, readRecords, ROOT, runBackgroundScenario, runScenario, type BackgroundScenario, type Scenario } from './helpers';

function listSources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? listSources(path) : path.endsWith('.ts') ? [path] : [];
  });
}

/*
 * Every way src/ hands an event name to a writer: `<sink>.write('a.b', ...)`, the background
 * manager's `audit('a.b', ...)` callback, `recordCliEvent(env, 'a.b', ...)`, a run's end record
 * (`this.#end('a.b', ...)`, kept for later on a full disk), and a CLI change recorded before it
 * is made, `new ChangeRecord(env, 'a.b')`.
 */
const WRITE_CALL = /(?:\.write\(|\baudit\(|\.#end\(|recordCliEvent\([^,]+,|new ChangeRecord\([^,]+,)([^,;\n]*)[,)]/g;
const EVENT_LITERAL = /'([a-z]+\.[a-z_.]+)'/g;

function getWrittenEvents(): Map<string, string[]> {
  const written = new Map<string, string[]>();
  for (const file of listSources(join(ROOT, 'src'))) {
    const text = readFileSync(file, 'utf8');
    for (const call of text.matchAll(WRITE_CALL)) {
      // The first argument, which may choose between names (`denied ? 'exec.denied' : 'exec.rejected'`).
      for (const match of call[1]!.matchAll(EVENT_LITERAL)) {
        const where = written.get(match[1]!) ?? [];
        where.push(relative(ROOT, file));
        written.set(match[1]!, where);
      }
    }
  }
  return written;
}

describe('one list of event types', () => {
  test('every event a writer in src/ can emit is in the list the reader uses, and every listed event is written somewhere', () => {
    const written = getWrittenEvents();
    // The scan itself must see the writers it is meant to police.
    expect([...written.keys()]).toEqual(expect.arrayContaining(['exec.started', 'background.ended', 'secret.set', 'gateway.started']));
    const unknown = [...written].filter(([event]) => !isAuditEventName(event)).map(([event, files]) => `${event} (${files.join(', ')})`);
    expect(unknown).toEqual([]);
    // chain.resumed is written by the log itself with a computed name list; the rest appear literally.
    const unwritten = Object.keys(AUDIT_EVENTS).filter((event) => !written.has(event) && event !== 'chain.resumed');
    expect(unwritten).toEqual([]);
    expect(readFileSync(join(ROOT, 'src', 'audit', 'log.ts'), 'utf8')).toContain("'chain.resumed'");
  });

  test('the reader gives every listed event its role: an end record closes its run with the exit status', () => {
    for (const [event, role] of Object.entries(AUDIT_EVENTS)) {
      const emitted: RunSummary[] = [];
      const assembler = new RunAssembler((summary) => emitted.push(summary));
      const base = { v: 1, prev: '0', hash: '0', time: '2025-01-05T10:00:00.000Z', runId: 'run_a' };
      assembler.pushRecord({ ...base, seq: 1, event: 'exec.request', command: 'true' });
      assembler.pushRecord({ ...base, seq: 2, event, exitCode: 7, signal: null, state: 'exited', code: 'EXECGATE_ERR_X' });
      // Still open after the event: only a terminal event lets it out before finish().
      const closed = emitted.length === 1;
      expect([event, closed]).toEqual([event, ['denied', 'rejected', 'ended', 'failed'].includes(role)]);
      assembler.finish();
      const summary = emitted[0]!;
      expect(getEventRole(event)).toBe(role);
      if (role === 'ended') expect([event, summary.end, summary.exitCode]).toEqual([event, 'finished', 7]);
    }
  });
});

describe('review of real runs', () => {
  let tmp: ReturnType<typeof makeTempDir>;
  let home: string;
  let bg: BackgroundScenario;
  let scenario: Scenario;

  beforeAll(async () => {
    tmp = makeTempDir('execgate-audit-review-');
    home = tmp.dir;
    scenario = await runScenario(home);
    bg = await runBackgroundScenario(home);
  }, 120_000);
  afterAll(() => tmp.cleanup());

  const searchIds = (args: string[]): string[] => {
    const result = execgate(['audit', 'search', '--json', ...args], home);
    expect(result.status).toBe(0);
    return [...new Set(result.stdout.split('\n').filter(Boolean).map((line) => (JSON.parse(line) as { runId?: string; event: string }).runId ?? (JSON.parse(line) as { event: string }).event))];
  };

  test('the writer records background.ended; show, search and stats read the end of every background run', () => {
    const events = readRecords(join(home, 'audit.log')).filter((record) => record.runId === bg.failed).map((record) => record.event);
    expect(events).toEqual(['exec.request', 'exec.started', 'background.started', 'background.ended']);
    const show = execgate(['audit', 'show', bg.failed], home);
    expect(show.stdout).toMatch(/exit {6}5 after \d/);
    expect(show.stdout).not.toContain('no end');
    const killed = execgate(['audit', 'show', bg.killed], home).stdout;
    expect(killed).toMatch(/exit {6}SIGKILL/);
    const table = execgate(['audit', 'search', '--actor', 'codex/bg'], home).stdout;
    expect(table).not.toContain('no end');
    expect(table.split('\n').find((line) => line.includes(bg.exited))).toMatch(/allowed\s+0\s+/);
    const failed = searchIds(['--failed']);
    expect(failed).toEqual(expect.arrayContaining([bg.failed, bg.killed, scenario.exit3]));
    expect(failed).not.toContain(bg.exited);
    const stats = JSON.parse(execgate(['audit', 'stats', '--json'], home).stdout) as { exits: Record<string, number> };
    expect(stats.exits['no end']).toBeUndefined();
    expect(stats.exits).toMatchObject({ '5': 1, SIGKILL: 1 });
  });

  test('search leaves gateway start/stop rows out unless --all or --event asks', () => {
    const plain = execgate(['audit', 'search'], home).stdout;
    expect(plain).not.toMatch(/gateway\.(started|stopped)/);
    expect(plain).toContain(bg.exited);
    expect(execgate(['audit', 'search', '--all'], home).stdout).toMatch(/gateway\.started[\s\S]*gateway\.stopped/);
    expect(searchIds(['--event', 'gateway.*'])).toEqual(['gateway.started', 'gateway.stopped']);
  });

  test('--ref finds the denied and the rejected requests that named the secret, not only the runs that used it', () => {
    const ids = searchIds(['--ref', 'secret:x']);
    expect(ids).toEqual(expect.arrayContaining([scenario.ok, scenario.encoded, scenario.denied, bg.exited, bg.rejectedRef]));
    expect(searchIds(['--ref', 'x', '--denied'])).toEqual([scenario.denied]);
    const stats = JSON.parse(execgate(['audit', 'stats', '--json'], home).stdout) as { secrets: { ref: string; denied: number; rejected: number; found: number }[] };
    expect(stats.secrets.find((use) => use.ref === '<<secret:x>>')).toMatchObject({ denied: 1, rejected: 1, found: 3 });
  });
});

test('members the reader does not interpret (sandbox, egress) are shown as recorded, in show and in the report', async () => {
   
  const { AuditLog } = require('../../src/audit/log') as typeof import('../../src/audit/log');
  const tmp = makeTempDir('execgate-audit-extra-');
  try {
    const log = new AuditLog({ home: tmp.dir });
    const runId = 'run_extra_1';
    log.write('exec.request', { runId, actor: 'tool:t', command: 'curl https://api.example.com' });
    log.write('exec.started', { runId, actor: 'tool:t', command: 'curl https://api.example.com', refs: [], sandbox: { mode: 'required', network: 'proxy' }, egress: { allowedHosts: ['api.example.com'] } });
    log.write('exec.finished', { runId, actor: 'tool:t', exitCode: 0, signal: null, timedOut: false, durationMs: 3, egressDecisions: [{ host: 'api.example.com', allowed: true }] });
    log.close();
    const show = execgate(['audit', 'show', runId], tmp.dir).stdout;
    expect(show).toContain('exec.started.sandbox: {"mode":"required","network":"proxy"}');
    expect(show).toContain('exec.started.egress: {"allowedHosts":["api.example.com"]}');
    expect(show).toContain('exec.finished.egressDecisions: [{"allowed":true,"host":"api.example.com"}]');
    const out = join(tmp.dir, 'r.html');
    expect(execgate(['audit', 'report', '--html', out], tmp.dir).status).toBe(0);
    const html = readFileSync(out, 'utf8');
    const data = JSON.parse(/<script type="application\/json" id="execgate-data">(.*?)<\/script>/s.exec(html)![1]!) as { runs: { extra?: Record<string, unknown> }[] };
    expect(data.runs[0]!.extra).toMatchObject({ 'exec.started.sandbox': { mode: 'required', network: 'proxy' }, 'exec.finished.egressDecisions': [{ host: 'api.example.com', allowed: true }] });
  } finally {
    tmp.cleanup();
  }
});
