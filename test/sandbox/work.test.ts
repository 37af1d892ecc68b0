/*
 * Real work still works inside the sandbox: git, node and python3 on the cwd, pipes, job
 * control and password prompts on a PTY, colours, a dev server one run starts and a later run
 * reaches, background runs that outlive the CLI call, and execgate itself inside a command
 * (with a fresh, empty state).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import type { Gateway } from '../../src/gateway';
import { getRecordPath } from '../../src/run/background/records';
import { listenBelowEphemeral } from '../helpers/listen';
import { baseEnv, isAlive, makeTempDir, waitFor } from '../helpers/tmp';
import { describeSandboxed, makeGateway, runIn } from './helpers';

jest.setTimeout(120_000);

const CLI = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');
let tmp: ReturnType<typeof makeTempDir>;
let work: string;
let gateway: Gateway;

beforeEach(() => {
  tmp = makeTempDir('execgate-sbx-work-');
  work = join(tmp.dir, 'work');
  mkdirSync(work);
  gateway = makeGateway({ home: join(tmp.dir, 'state'), env: baseEnv(), cwd: work, sandbox: { mode: 'required' } });
});
afterEach(async () => {
  await gateway.close();
  rmSync(tmp.dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 });
});

describeSandboxed('real work inside the sandbox', () => {
  test('git init, add and commit in the working directory', async () => {
    const result = await gateway.exec({
      command: 'git init -q . && echo hello > a.txt && git add a.txt && git -c user.name=t -c user.email=t@example.org commit -qm first && git log --oneline | wc -l',
    });
    expect(result.sandbox.sandboxed).toBe(true);
    expect(result.exitCode).toBe(0);
    expect(result.stdout.trim()).toBe('1');
    expect(existsSync(join(work, '.git', 'HEAD'))).toBe(true);
  });

  test('node and python3 scripts read and write the cwd; pipes work', async () => {
    writeFileSync(join(work, 'in.txt'), 'one\ntwo\nthree\n');
    const result = await gateway.exec({
      command: [
        `node -e "const fs=require('fs');fs.writeFileSync('from-node.txt', fs.readFileSync('in.txt','utf8').toUpperCase())"`,
        `python3 -c "open('from-python.txt','w').write(str(len(open('from-node.txt').read().split())))"`,
        'cat from-node.txt | grep T | sort | tr "\\n" ,',
      ].join(' && '),
    });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe('THREE,TWO,');
    expect(readFileSync(join(work, 'from-python.txt'), 'utf8')).toBe('3');
  });

  test('PTY: job control, colours and top', async () => {
    const result = await gateway.exec({
      mode: 'pty',
      // (a job long enough to still be running when `jobs` looks, however late it looks)
      command: 'set -m; sleep 2 & jobs; fg %1 >/dev/null; echo fg-done; printf "\\033[31mred\\033[0m\\n"; top -b -n 1 | head -1 | cut -c1-3',
    });
    expect(result.sandbox.sandboxed).toBe(true);
    expect(result.exitCode).toBe(0);
    expect(result.output).toMatch(/\[1\]\+\s+Running\s+sleep 2/);
    expect(result.output).toContain('fg-done');
    expect(result.output).toContain('\u001b[31mred\u001b[0m');
    expect(result.output).toContain('top');
  });

  test('PTY: a password prompt read with `read -s` gets its input, and the input is not echoed', async () => {
    const started = await gateway.exec({ mode: 'background', pty: true, command: 'read -s -p "password: " pw; echo; echo "length=${#pw}"' });
    expect(started.sandboxed).toBe(true);
    expect(await waitFor(() => readFileSync(started.outputPath, 'utf8').includes('password: '), 30_000)).toBe(true);
    await gateway.background.write(started.id, 'hunter2-typed\r');
    const ended = await gateway.background.wait(started.id, 30_000);
    expect(ended.exitCode).toBe(0);
    const output = readFileSync(started.outputPath, 'utf8');
    expect(output).toContain('length=13');
    expect(output).not.toContain('hunter2-typed');
  });

  test('a dev server a background run starts on localhost is reachable from a later sync run; the host loopback is not', async () => {
    const host: Server = createServer((_req, res) => res.end('HOST-SERVICE'));
    // The host service just below the ephemeral ports, the dev server's fixed port below that (and
    // so off every port the namespace hands out): the two never share a number.
    const hostPort = await listenBelowEphemeral(host);
    try {
      writeFileSync(join(work, 'marker.txt'), 'FROM-DEV-SERVER');
      const drawn = 8000 + Math.floor(Math.random() * 12000);
      const port = drawn === hostPort ? drawn + 1 : drawn;
      const server = await gateway.exec({ mode: 'background', command: `exec python3 -u -m http.server ${port} --bind 127.0.0.1` });
      const probe = `curl -s --max-time 10 http://localhost:${port}/marker.txt`;
      let reached = '';
      expect(await waitFor(() => existsSync(server.outputPath) && readFileSync(server.outputPath, 'utf8').includes('Serving HTTP'), 30_000)).toBe(true);
      reached = (await gateway.exec({ command: probe })).stdout;
      expect(reached).toBe('FROM-DEV-SERVER');
      // Both runs in the gateway's one namespace, as their records say (not a namespace each).
      const records = readFileSync(join(tmp.dir, 'state', 'audit.log'), 'utf8').trim().split('\n')
        .map((line) => JSON.parse(line) as { event: string; sandbox?: { network?: { shared?: boolean; namespace?: string } } })
        .filter((record) => record.event === 'exec.started');
      expect(records).toHaveLength(2);
      for (const record of records) expect(record.sandbox?.network).toMatchObject({ mode: 'open', shared: true, namespace: expect.stringMatching(/^net:\[\d+\]$/) });
      expect(new Set(records.map((record) => record.sandbox?.network?.namespace)).size).toBe(1);
      const hostProbe = await gateway.exec({ command: `curl -s --max-time 10 http://127.0.0.1:${hostPort}/ || echo unreachable` });
      expect(hostProbe.stdout).not.toContain('HOST-SERVICE');
      expect(hostProbe.stdout).toContain('unreachable');
      // The control: unsandboxed, the host service answers.
      const open = makeGateway({ home: join(tmp.dir, 'state2'), env: baseEnv(), cwd: work, sandbox: { mode: 'off' } });
      try {
        expect((await open.exec({ command: `curl -s --max-time 10 http://127.0.0.1:${hostPort}/` })).stdout).toBe('HOST-SERVICE');
      } finally {
        await open.close();
      }
      await gateway.background.kill(server.id);
    } finally {
      await new Promise((resolve) => host.close(resolve));
    }
  });

  test('a background run started by the CLI outlives the CLI call, sandboxed', async () => {
    const policy = join(tmp.dir, 'policy.yaml');
    writeFileSync(policy, 'version: 1\nsandbox:\n  mode: required\n');
    const env = { ...baseEnv(), EXECGATE_HOME: join(tmp.dir, 'cli-state') };
    const cli = spawnSync(process.execPath, [CLI, 'run', '--json', '--mode', 'background', '--policy', policy, '--', 'while [ ! -e go ]; do sleep 0.02; done; echo outlived > out.txt'], { cwd: work, env, encoding: 'utf8' });
    expect(cli.status).toBe(0);
    expect(JSON.parse(cli.stdout)).toMatchObject({ state: 'running', sandboxed: true });
    // The CLI has exited; the run is still waiting for `go`.
    expect(existsSync(join(work, 'out.txt'))).toBe(false);
    writeFileSync(join(work, 'go'), '');
    // The shell creates the file before it writes to it: wait for the line, not the name.
    expect(await waitFor(() => existsSync(join(work, 'out.txt')) && readFileSync(join(work, 'out.txt'), 'utf8') === 'outlived\n', 30_000)).toBe(true);
    // The detached supervisor records the end, then exits: let it, before the directory goes.
    const record = getRecordPath(env.EXECGATE_HOME, (JSON.parse(cli.stdout) as { id: string }).id);
    const supervisor = (): number => (JSON.parse(readFileSync(record, 'utf8')) as { supervisorPid: number }).supervisorPid;
    expect(await waitFor(() => !isAlive(supervisor()), 20_000)).toBe(true);
  });

  test('execgate inside a command gets a fresh, empty state: no outer vault, audit key or secrets', async () => {
    const outerHome = gateway.home;
    // The outer state: a vault secret, through the CLI.
    const set = spawnSync(process.execPath, [CLI, 'secret', 'set', 'outer-token', '--store', 'vault'], {
      env: { ...baseEnv(), EXECGATE_HOME: outerHome }, input: 'outer-secret-value-12345\n', encoding: 'utf8',
    });
    expect(set.status).toBe(0);
    const result = await runIn(gateway, 'sync', [
      `ls -A ${outerHome} | wc -l | sed "s/^/entries=/"`,
      `EXECGATE_HOME=${outerHome} node ${CLI} secret list 2>&1 | grep -c outer-token | sed "s/^/listed=/"`,
      // The token is put together at run time, so the outer gateway does not resolve it itself.
      `T='<<secret:'; EXECGATE_HOME=${outerHome} node ${CLI} run -- "printf %s '\${T}outer-token>>' | rev"; echo`,
      `EXECGATE_HOME=/tmp/nested node ${CLI} run -- 'echo nested-ok'`,
    ].join('; '));
    expect(result.sandboxed).toBe(true);
    expect(result.output).toContain('entries=0');
    expect(result.output).toContain('listed=0');
    expect(result.output).not.toContain('54321-eulav-terces-retuo');
    expect(result.output).toContain('>>nekot-retuo:terces<<');
    expect(result.output).toContain('nested-ok');
  });
});
