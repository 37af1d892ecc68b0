import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { findByCookie } from '../../src/process/terminate';
import { DEFAULT_POLICY } from '../../src/policy/effective';
import { baseEnv, isAlive, makeTempDir, waitFor, UNSANDBOXED_POLICY } from '../helpers/tmp';

let tmp: ReturnType<typeof makeTempDir>;
let gateway: Gateway;
const PASSWORD = 'db-password-value-0123456789';

beforeEach(() => {
  tmp = makeTempDir();
  gateway = createGateway({ policy: UNSANDBOXED_POLICY, home: join(tmp.dir, 'home'), env: baseEnv(), cwd: tmp.dir });
  gateway.refs.set('secret', 'db-password', PASSWORD);
});
afterEach(async () => {
  await gateway.close();
  tmp.cleanup();
});

function readPids(file: string): number[] {
  return readFileSync(file, 'utf8').split(/\s+/).filter(Boolean).map(Number);
}

function countZombieChildren(): number {
  let count = 0;
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (fields[0] === 'Z' && Number(fields[1]) === process.pid) count++;
    } catch { /* gone */ }
  }
  return count;
}

describe('background mode', () => {
  test('returns at once with the BackgroundProcess; the command stays unresolved; output is redacted in the file', async () => {
    // The command cannot finish before the test creates `go`, so a BackgroundProcess that says
    // `running` proves exec() returned without waiting for it (no wall-clock assertion).
    const go = join(gateway.home, 'go');
    const command = `while [ ! -e ${go} ]; do sleep 0.02; done; echo "pw=<<secret:db-password>>"; exit 3`;
    const bg = await gateway.exec({ command, mode: 'background' });
    expect(bg).toMatchObject({ command, state: 'running', exitCode: null, pty: false });
    writeFileSync(go, '');
    expect(bg.pgid).toBe(bg.pid);
    expect(bg.outputPath).toBe(join(gateway.home, 'bg', `${bg.id}.log`));
    const ended = await gateway.background.wait(bg.id, 30_000);
    expect(ended).toMatchObject({ state: 'exited', exitCode: 3 });
    const file = readFileSync(bg.outputPath, 'utf8');
    expect(file).toBe('pw=[REDACTED:secret:db-password]\n\n[background process completed with exit code 3]\n');
    expect(file).not.toContain(PASSWORD);
    const status = gateway.background.status(bg.id);
    expect(status.output.text).toContain('[REDACTED:secret:db-password]');
    expect(status.output.eof).toBe(true);
    expect(status.runtimeMs).toBeGreaterThan(0);
  });

  test('a PTY session answers a prompt via write(); the secret typed and echoed back is masked', async () => {
    const bg = await gateway.exec({ command: 'read -r -p "Password: " pw; echo "you typed: $pw"; printf %s "$pw" | sha256sum', mode: 'background', pty: true });
    expect(bg.pty).toBe(true);
    expect(await waitFor(() => gateway.background.status(bg.id).output.text.includes('Password:'), 30_000)).toBe(true);
    await gateway.background.write(bg.id, '<<secret:db-password>>\n');
    const ended = await gateway.background.wait(bg.id, 30_000);
    expect(ended.exitCode).toBe(0);
    const text = gateway.background.status(bg.id, { offset: 0 }).output.text;
    expect(text).not.toContain(PASSWORD);
    expect(text).toContain('you typed: [REDACTED:secret:db-password]');
    const { createHash } = await import('node:crypto');
    expect(text).toContain(createHash('sha256').update(PASSWORD).digest('hex'));
  });

  test('write() to a pipe-mode process reaches its stdin; ending the input ends a reader', async () => {
    const bg = await gateway.exec({ command: 'cat', mode: 'background' });
    await gateway.background.write(bg.id, 'line one\n');
    await gateway.background.write(bg.id, 'line two\n', { end: true });
    const ended = await gateway.background.wait(bg.id, 30_000);
    expect(ended.exitCode).toBe(0);
    expect(readFileSync(bg.outputPath, 'utf8')).toContain('line one\nline two\n');
    await expect(gateway.background.write(bg.id, 'late')).rejects.toMatchObject({ code: 'EXECGATE_ERR_BACKGROUND_ENDED' });
  });

  test('kill() ends the group, setsid-ed and double-forked children included, and records why', async () => {
    const command = [
      'setsid sleep 301 & echo $! >> pids',
      "( setsid sh -c 'sleep 302 & echo $! >> pids' & )",
      'sleep 303 & echo $! >> pids',
      'echo started; sleep 300',
    ].join('\n');
    const bg = await gateway.exec({ command, mode: 'background' });
    // All three pids on file before the kill, or the check below would look at fewer processes.
    expect(await waitFor(() => existsSync(join(tmp.dir, 'pids')) && readPids(join(tmp.dir, 'pids')).length === 3, 20_000)).toBe(true);
    const killed = await gateway.background.kill(bg.id, { grace: 300 });
    expect(killed.state).toBe('killed');
    expect(killed.reason).toBe('killed on request');
    const pids = readPids(join(tmp.dir, 'pids'));
    expect(await waitFor(() => pids.every((pid) => !isAlive(pid)), 20_000)).toBe(true);
    expect(findByCookie(bg.id)).toEqual([]);
    expect(readFileSync(bg.outputPath, 'utf8')).toMatch(/\[background process killed \(killed on request\); ended by SIGTERM\]\n$/);
  });

  test('a maximum runtime ends the run as timed_out', async () => {
    const bg = await gateway.exec({ command: 'echo begin; sleep 30', mode: 'background', timeout: 300, grace: 100 });
    const ended = await gateway.background.wait(bg.id, 30_000);
    expect(ended.state).toBe('timed_out');
    expect(readFileSync(bg.outputPath, 'utf8')).toMatch(/timed out after 300 ms/);
  });

  test('paging by offsets returns every byte exactly once, multi-byte characters never split', async () => {
    const bg = await gateway.exec({ command: 'for i in $(seq 1 3000); do echo "line $i é€😀"; done', mode: 'background' });
    await gateway.background.wait(bg.id, 10_000);
    const whole = readFileSync(bg.outputPath);
    let offset = 0;
    const parts: string[] = [];
    for (let guard = 0; guard < 10_000; guard++) {
      const { output } = gateway.background.status(bg.id, { offset, length: 1000 + (guard % 7) });
      expect(output.offset).toBe(offset);
      parts.push(output.text);
      offset = output.nextOffset;
      if (output.eof) break;
    }
    expect(Buffer.from(parts.join('')).equals(whole)).toBe(true);
    expect(parts.join('')).not.toContain('\ufffd');
  });

  test('the concurrency limit is a coded error and nothing starts', async () => {
    const limited = createGateway({
      home: join(tmp.dir, 'h2'),
      env: baseEnv(),
      cwd: tmp.dir,
      policy: { ...DEFAULT_POLICY, background: { ...DEFAULT_POLICY.background, maxConcurrent: 2 } },
    });
    try {
      await limited.exec({ command: 'sleep 30', mode: 'background' });
      await limited.exec({ command: 'sleep 30', mode: 'background' });
      await expect(limited.exec({ command: `touch ${join(tmp.dir, 'third')}`, mode: 'background' })).rejects.toMatchObject({ code: 'EXECGATE_ERR_BACKGROUND_LIMIT' });
      expect(existsSync(join(tmp.dir, 'third'))).toBe(false);
    } finally {
      await limited.close();
    }
  });

  test('unknown ids and removing a running process are coded errors', async () => {
    expect(() => gateway.background.status('run_nope_00')).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_BACKGROUND_NOT_FOUND' }));
    expect(() => gateway.background.status('../../etc/passwd')).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_BACKGROUND_NOT_FOUND' }));
    const bg = await gateway.exec({ command: 'sleep 30', mode: 'background' });
    expect(() => gateway.background.remove(bg.id)).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_BACKGROUND_RUNNING' }));
    await gateway.background.kill(bg.id, { grace: 100 });
    gateway.background.remove(bg.id);
    expect(existsSync(bg.outputPath)).toBe(false);
    expect(gateway.background.list().map((p) => p.id)).not.toContain(bg.id);
  });

  test('bad status, kill and wait options are coded errors; nothing is signalled', async () => {
    const bg = await gateway.exec({ command: 'sleep 30', mode: 'background' });
    const bad: Array<[() => unknown, RegExp]> = [
      [() => gateway.background.status(bg.id, { offset: -1 }), /`offset`/],
      [() => gateway.background.status(bg.id, { length: Number.NaN }), /`length`/],
      [() => gateway.background.status(bg.id, { offset: '5' as unknown as number }), /`offset`/],
    ];
    for (const [call, message] of bad) expect(call).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_INVALID_OPTION', message: expect.stringMatching(message) }));
    await expect(gateway.background.kill(bg.id, { signal: 'SIGFOO' as NodeJS.Signals })).rejects.toMatchObject({ code: 'EXECGATE_ERR_INVALID_OPTION' });
    await expect(gateway.background.kill(bg.id, { grace: -1 })).rejects.toMatchObject({ code: 'EXECGATE_ERR_INVALID_OPTION' });
    await expect(gateway.background.wait(bg.id, Number.POSITIVE_INFINITY)).rejects.toMatchObject({ code: 'EXECGATE_ERR_INVALID_TIMEOUT' });
    expect(isAlive(bg.pid)).toBe(true);
    expect(gateway.background.get(bg.id).state).toBe('running');
    await gateway.background.kill(bg.id, { signal: 'SIGINT', grace: 100 });
    expect(isAlive(bg.pid)).toBe(false);
  });

  test('close() kills running background processes by default and records it', async () => {
    const bg = await gateway.exec({ command: 'sleep 30', mode: 'background' });
    await gateway.close();
    expect(isAlive(bg.pid)).toBe(false);
    const record = JSON.parse(readFileSync(join(gateway.home, 'bg', `${bg.id}.json`), 'utf8'));
    expect(record).toMatchObject({ state: 'killed', reason: 'gateway closed' });
    expect(readFileSync(bg.outputPath, 'utf8')).toContain('[background process killed (gateway closed)');
  });

  test('a run kept past close() ends later without an error from the closed audit log', async () => {
    await gateway.close();
    gateway = createGateway({ policy: UNSANDBOXED_POLICY, home: join(tmp.dir, 'home-keep'), env: baseEnv(), cwd: tmp.dir, backgroundOnClose: 'keep' });
    const go = join(tmp.dir, 'go-keep');
    const bg = await gateway.exec({ command: `while [ ! -e ${go} ]; do sleep 0.02; done; echo kept`, mode: 'background' });
    await gateway.close();
    // The run is still going after close() (it waits for `go`): it ends only now.
    expect(isAlive(bg.pid)).toBe(true);
    writeFileSync(go, '');
    const ended = await gateway.background.wait(bg.id, 30_000);
    expect(ended).toMatchObject({ state: 'exited', exitCode: 0 });
    // Let the end's callbacks run: a throw from them (the closed audit log) fails this test.
    await new Promise((resolve) => setImmediate(resolve));
    expect(readFileSync(bg.outputPath, 'utf8')).toContain('kept\n');
    const events = readFileSync(join(tmp.dir, 'home-keep', 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line).event);
    expect(events.at(-1)).toBe('gateway.stopped');
  });

  test('100 concurrent background processes: started, listed, read, killed; no leaked fds or zombies', async () => {
    await gateway.close();
    gateway = createGateway({
      home: join(tmp.dir, 'home100'),
      // A plain PATH: tool-version-manager shims on developer machines print noise under load.
      env: baseEnv({ PATH: '/usr/bin:/bin' }),
      cwd: tmp.dir,
      policy: { ...DEFAULT_POLICY, background: { ...DEFAULT_POLICY.background, maxConcurrent: 100 } },
      // The spawn helper keeps a pool of idle connections whose size varies; direct spawns
      // make the descriptor count an exact measure of what the runs themselves leave open.
      spawner: 'direct',
      // A warm sandbox is set up after a sync run has ended, so the one the first run leaves
      // would appear (three pipes) in the middle of the count; background runs never use one.
      warmSandboxes: 0,
    });
    // One run first: the containment watchdog is started once per process, not per run.
    await gateway.exec({ command: 'true' });
    const fdsBefore = readdirSync('/proc/self/fd').length;
    const many = await Promise.all(Array.from({ length: 100 }, (_, i) => gateway.exec({ command: `echo proc-${i}; sleep 60`, mode: 'background' })));
    expect(new Set(many.map((p) => p.id)).size).toBe(100);
    const listed = gateway.background.list().filter((p) => p.state === 'running');
    expect(listed).toHaveLength(100);
    // Generous: on a loaded 2-core machine a hundred shells take seconds to start.
    expect(await waitFor(() => many.every((p) => gateway.background.status(p.id).output.text.length > 0), 45_000, 100)).toBe(true);
    many.forEach((p, i) => expect(gateway.background.status(p.id).output.text).toBe(`proc-${i}\n`));
    await Promise.all(many.map((p) => gateway.background.kill(p.id, { grace: 200 })));
    for (const p of many) expect(isAlive(p.pid)).toBe(false);
    await waitFor(() => readdirSync('/proc/self/fd').length <= fdsBefore, 20_000);
    expect(readdirSync('/proc/self/fd').length).toBeLessThanOrEqual(fdsBefore);
    expect(countZombieChildren()).toBe(0);
  }, 120_000);
});
