import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { connect } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { AutoSpawner, RSS_CHECK_MS, type SpawnedProcess } from '../../src/process/spawner';
import { HelperSpawner } from '../../src/process/spawner/helper';
import { baseEnv, isAlive, makeTempDir, waitFor, UNSANDBOXED_POLICY } from '../helpers/tmp';

const API_KEY = 'sk-test-NOT-REAL-spawner-0123456789';

let tmp: ReturnType<typeof makeTempDir>;
let gateway: Gateway;

beforeEach(() => {
  tmp = makeTempDir();
  gateway = createGateway({ policy: UNSANDBOXED_POLICY, home: join(tmp.dir, 'home'), env: baseEnv(), cwd: tmp.dir, spawner: 'helper' });
  gateway.refs.set('secret', 'api-key', API_KEY);
});
afterEach(async () => {
  await gateway.close();
  tmp.cleanup();
});

function parentOf(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'latin1');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
}

/** Runs `echo $PPID $$; ...` and resolves with the two pids as soon as the line arrives. */
function startReporting(gw: Gateway, rest: string): { pids: Promise<[number, number]>; result: ReturnType<Gateway['exec']> } {
  let found: (pids: [number, number]) => void;
  const pids = new Promise<[number, number]>((resolve) => { found = resolve; });
  let seen = '';
  const result = gw.exec({ command: `echo $PPID $$; ${rest}` }, {
    onOutput: (stream, chunk) => {
      if (stream !== 'stdout') return;
      seen += chunk.toString();
      const line = /^(\d+) (\d+)\n/.exec(seen);
      if (line) found([Number(line[1]), Number(line[2])]);
    },
  });
  return { pids, result };
}

async function drain(child: SpawnedProcess): Promise<{ stdout: string; stderr: string; code: number | null }> {
  const read = (stream: NodeJS.ReadableStream): Promise<string> => new Promise((resolve) => {
    let text = '';
    stream.on('data', (chunk: Buffer) => { text += chunk.toString(); });
    stream.once('close', () => resolve(text));
  });
  const [stdout, stderr, exit] = await Promise.all([read(child.stdout), read(child.stderr), child.exit]);
  return { stdout, stderr, code: exit.code };
}

describe('spawning from the helper process', () => {
  test('sync runs behave as with a direct spawn: output, stderr, exit code, redaction, /dev/null stdin', async () => {
    const result = await gateway.exec({ command: 'echo "key=<<secret:api-key>>"; echo err >&2; readlink /proc/self/fd/0; cat; exit 7' });
    expect(result.stdout).toBe('key=[REDACTED:secret:api-key]\n/dev/null\n');
    expect(result.stderr).toBe('err\n');
    expect(result.exitCode).toBe(7);
    expect(result.redactions).toBe(1);
  });

  test('the shell is the helper\'s child, not this process\'s, and its output arrives on pipes this process made (not through the helper)', async () => {
    const result = await gateway.exec({ command: 'echo $PPID; readlink /proc/self/fd/1 /proc/self/fd/2; test -p /dev/stdout && test -p /dev/stderr && echo pipes' });
    const [ppid, out, err, pipes] = result.stdout.trim().split('\n');
    expect(Number(ppid)).not.toBe(process.pid);
    expect(parentOf(Number(ppid))).toBe(process.pid);
    // FIFOs of this process's pipe pool, unlinked once opened.
    expect(out).toMatch(/\/execgate-pipes-[0-9]+-[^/]+\/[0-9]+ \(deleted\)$/);
    expect(err).toMatch(/\/execgate-pipes-[0-9]+-[^/]+\/[0-9]+ \(deleted\)$/);
    expect(out).not.toBe(err);
    expect(pipes).toBe('pipes');
  });

  test('resolved values travel over IPC only: not in the helper\'s argv or environment', async () => {
    const { pids, result } = startReporting(gateway, 'sleep 0.3; printf %s "<<secret:api-key>>" | wc -c');
    const [helperPid] = await pids;
    expect(readFileSync(`/proc/${helperPid}/cmdline`, 'latin1')).not.toContain(API_KEY);
    expect(readFileSync(`/proc/${helperPid}/environ`, 'latin1')).not.toContain(API_KEY);
    expect((await result).stdout).toMatch(new RegExp(`\\n${API_KEY.length}\\n$`));
  });

  test('concurrent runs each get their own streams', async () => {
    const results = await Promise.all(Array.from({ length: 24 }, (_, i) => gateway.exec({ command: `echo out-${i}; echo err-${i} >&2` })));
    results.forEach((result, i) => {
      expect(result.stdout).toBe(`out-${i}\n`);
      expect(result.stderr).toBe(`err-${i}\n`);
    });
  });

  test('large output is read in full, bounded in memory, and a timeout still stops the group', async () => {
    const big = await gateway.exec({ command: 'head -c 20000000 /dev/zero | tr "\\0" a; echo; echo done >&2' });
    expect(big.bytes.stdout).toBe(20_000_001);
    expect(big.truncated.stdout).toBe(true);
    expect(big.stderr).toBe('done\n');
    // The pid file must be written before the timeout fires: room for a loaded machine.
    const timed = await gateway.exec({ command: 'sleep 300 & echo $! > pid; sleep 300', timeout: 2000, grace: 200 });
    expect(timed.timedOut).toBe(true);
    const pid = Number(readFileSync(join(tmp.dir, 'pid'), 'utf8'));
    expect(pid).toBeGreaterThan(1);
    expect(await waitFor(() => !isAlive(pid), 20_000)).toBe(true);
  });

  test('if the helper dies, the run in flight fails with EXECGATE_ERR_SPAWN_FAILED and is stopped; the next run gets a new helper', async () => {
    const { pids, result } = startReporting(gateway, 'exec sleep 300');
    const [helperPid, shellPid] = await pids;
    process.kill(helperPid, 'SIGKILL');
    await expect(result).rejects.toMatchObject({ code: 'EXECGATE_ERR_SPAWN_FAILED' });
    expect(await waitFor(() => !isAlive(shellPid), 20_000)).toBe(true);
    const next = await gateway.exec({ command: 'echo $PPID' });
    expect(next.exitCode).toBe(0);
    expect(Number(next.stdout)).not.toBe(helperPid);
    expect(parentOf(Number(next.stdout))).toBe(process.pid);
  });

  test('close() ends the helper', async () => {
    const ppid = Number((await gateway.exec({ command: 'echo $PPID' })).stdout);
    expect(isAlive(ppid)).toBe(true);
    await gateway.close();
    expect(await waitFor(() => !isAlive(ppid), 20_000)).toBe(true);
    await expect(gateway.exec({ command: 'true' })).rejects.toMatchObject({ code: 'EXECGATE_ERR_GATEWAY_CLOSED' });
  });

  test('an idle helper does not keep the host process alive', () => {
    // The built library (npm test builds first), in a process of its own that never calls close().
    const script = `
      const { createGateway } = require(${JSON.stringify(join(__dirname, '..', '..', 'dist', 'gateway.js'))});
      const gateway = createGateway({ home: process.argv[1], env: { PATH: '/usr/bin:/bin', EXECGATE_KEYRING: 'off' }, spawner: 'helper', audit: false });
      gateway.exec({ command: 'echo ran' }).then((r) => process.stdout.write(r.stdout));
    `;
    const child = spawnSync(process.execPath, ['-e', script, join(tmp.dir, 'h')], { encoding: 'utf8', timeout: 20_000 });
    expect(child.error).toBeUndefined();
    expect(child.status).toBe(0);
    expect(child.stdout).toBe('ran\n');
  });

  test('a connection to the helper socket without the gateway\'s key is closed at once and takes no place: runs go on', async () => {
    const spawner = new HelperSpawner();
    try {
      await spawner.start();
      const socketPath = spawner.socketPath!;
      // More than the connections the gateway keeps waiting for runs, each with a well-formed
      // token (what the helper itself sends after the key).
      const forged = Array.from({ length: 100 }, () => new Promise<void>((resolve, reject) => {
        const socket = connect(socketPath);
        socket.on('error', reject);
        socket.once('close', () => resolve());
        socket.write(randomBytes(32).toString('hex'));
      }));
      await Promise.all(forged);
      const child = await spawner.spawn({ shell: '/bin/sh', args: ['-c', 'echo still spawning'], env: {}, cwd: tmp.dir, stdin: 'ignore' });
      expect(await drain(child)).toEqual({ stdout: 'still spawning\n', stderr: '', code: 0 });
    } finally {
      await spawner.close();
    }
  });

  test('a shell the helper cannot start is reported with its errno', async () => {
    const spawner = new HelperSpawner();
    try {
      await expect(spawner.spawn({ shell: join(tmp.dir, 'no-such-shell'), args: ['-c', 'true'], env: {}, cwd: tmp.dir, stdin: 'ignore' }))
        .rejects.toMatchObject({ code: 'ENOENT' });
      const child = await spawner.spawn({ shell: '/bin/sh', args: ['-c', 'cat; echo ok'], env: {}, cwd: tmp.dir, stdin: 'pipe' });
      child.stdin?.end('from stdin ');
      expect(await drain(child)).toEqual({ stdout: 'from stdin ok\n', stderr: '', code: 0 });
    } finally {
      await spawner.close();
    }
  });
});

describe('choosing the spawner', () => {
  test('an unknown `spawner` option or EXECGATE_SPAWNER value is refused', () => {
    expect(() => createGateway({ home: join(tmp.dir, 'x'), env: baseEnv(), spawner: 'fork' as never })).toThrow(
      expect.objectContaining({ code: 'EXECGATE_ERR_INVALID_OPTION', message: expect.stringContaining('`spawner`') }),
    );
    expect(() => createGateway({ home: join(tmp.dir, 'y'), env: baseEnv({ EXECGATE_SPAWNER: 'nope' }) })).toThrow(
      expect.objectContaining({ code: 'EXECGATE_ERR_INVALID_OPTION', message: expect.stringContaining('EXECGATE_SPAWNER') }),
    );
  });

  test('`direct` spawns from this process; EXECGATE_SPAWNER sets the default', async () => {
    for (const gw of [
      createGateway({ policy: UNSANDBOXED_POLICY, home: join(tmp.dir, 'd1'), env: baseEnv(), cwd: tmp.dir, spawner: 'direct' }),
      createGateway({ policy: UNSANDBOXED_POLICY, home: join(tmp.dir, 'd2'), env: baseEnv({ EXECGATE_SPAWNER: 'direct' }), cwd: tmp.dir }),
    ]) {
      try {
        expect(Number((await gw.exec({ command: 'echo $PPID' })).stdout)).toBe(process.pid);
      } finally {
        await gw.close();
      }
    }
  });

  test('`auto` spawns directly while this process is small and from the helper once it is large', async () => {
    const request = { shell: '/bin/sh', args: ['-c', 'echo $PPID'], env: {}, cwd: tmp.dir, stdin: 'ignore' } as const;
    const small = new AutoSpawner(Number.MAX_SAFE_INTEGER);
    const large = new AutoSpawner(0);
    try {
      expect(Number((await drain(await small.spawn(request))).stdout)).toBe(process.pid);
      expect(small.usesHelper).toBe(false);
      expect(Number((await drain(await large.spawn(request))).stdout)).not.toBe(process.pid);
      expect(large.usesHelper).toBe(true);
    } finally {
      await Promise.all([small.close(), large.close()]);
    }
  });

  test('`auto` notices this process growing past its threshold within RSS_CHECK_MS and moves to the helper', async () => {
    const request = { shell: '/bin/sh', args: ['-c', 'echo $PPID'], env: {}, cwd: tmp.dir, stdin: 'ignore' } as const;
    const spawner = new AutoSpawner(process.memoryUsage.rss() + 48 * 1024 * 1024);
    try {
      expect(Number((await drain(await spawner.spawn(request))).stdout)).toBe(process.pid);
      // Resident (every page written), and well past the threshold whatever else the process frees meanwhile.
      const grown = Buffer.alloc(320 * 1024 * 1024, 1);
      await new Promise((resolve) => setTimeout(resolve, RSS_CHECK_MS + 20));
      expect(Number((await drain(await spawner.spawn(request))).stdout)).not.toBe(process.pid);
      expect(spawner.usesHelper).toBe(true);
      expect(grown[grown.length - 1]).toBe(1);
    } finally {
      await spawner.close();
    }
  });
});
