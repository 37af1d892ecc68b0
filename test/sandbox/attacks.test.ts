/*
 * The attacks of the isolation issue, each tried through a real gateway with real bash in all
 * three modes: with the sandbox they fail; with `sandbox.mode: off` (the control, sync mode)
 * the same command succeeds, which proves each probe is a real attack and not a typo that
 * could never have worked.
 */
import { execFile, execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Gateway } from '../../src/gateway';
import { getRecordPath } from '../../src/run/background/records';
import { baseEnv, isAlive, makeTempDir, waitFor } from '../helpers/tmp';
import { describeSandboxed, findProcesses, makeGateway, MODES, runIn, type Mode } from './helpers';

jest.setTimeout(120_000);

const CLI = join(__dirname, '..', '..', 'dist', 'cli', 'main.js');
const PROBE = 'probe-VALUE-zz-98765';
const KEY_TEXT = 'PRIVATE-KEY-MATERIAL-0123456789';

let tmp: ReturnType<typeof makeTempDir>;
let userHome: string;
let work: string;

function env(): NodeJS.ProcessEnv {
  return baseEnv({ HOME: userHome, EXECGATE_SECRET_PROBE: PROBE });
}

function gatewayWith(mode: 'required' | 'off', network: 'none' | 'open' = 'none'): Gateway {
  return makeGateway({ home: join(tmp.dir, 'state'), env: env(), cwd: work, sandbox: { mode, network } });
}

beforeEach(() => {
  tmp = makeTempDir('execgate-sbx-');
  userHome = join(tmp.dir, 'user');
  work = join(tmp.dir, 'work');
  mkdirSync(join(userHome, '.ssh'), { recursive: true });
  mkdirSync(work);
  writeFileSync(join(userHome, '.ssh', 'id_ed25519'), KEY_TEXT);
  writeFileSync(join(userHome, '.netrc'), `machine example.org password ${KEY_TEXT}`);
});
// A detached supervisor may still be writing its end record as the test ends.
afterEach(() => rmSync(tmp.dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 }));

const ATTACKS: Record<string, { command: string; leaked: (output: string) => boolean }> = {
  'read the gateway environment through /proc/$PPID/environ': {
    command: 'tr "\\0" "\\n" < /proc/$PPID/environ | grep EXECGATE_SECRET | rev',
    leaked: (output) => output.includes(PROBE.split('').reverse().join('')),
  },
  'read every process environment on the host': {
    command: 'for f in /proc/[0-9]*/environ; do tr "\\0" "\\n" < $f; done 2>/dev/null | grep -c EXECGATE_SECRET_PROBE | sed "s/^/count=/"',
    leaked: (output) => !/count=0\b/.test(output),
  },
  'list the host processes (the gateway is a node process)': {
    // The run's own egress bridge (a node process inside the sandbox, the shell's parent) is not the gateway.
    command: `for p in /proc/[0-9]*; do grep -qs "execgate egress bridge" $p/cmdline || cat $p/comm 2>/dev/null; done | sort -u | tr "\\n" " "; test -e /proc/$PPID/cwd && ! grep -qs "execgate egress bridge" /proc/$PPID/cmdline && ls -l /proc/$PPID/exe | grep -q node && echo GATEWAY-PID-VISIBLE`,
    leaked: (output) => output.includes('GATEWAY-PID-VISIBLE') || /\bnode\b/.test(output),
  },
  'read the state directory (audit key, audit log)': {
    command: 'ls -A "$STATE"; cat "$STATE/audit.key" 2>/dev/null | wc -c | sed "s/^/keybytes=/"',
    leaked: (output) => output.includes('audit.log') || !/keybytes=0\b/.test(output),
  },
  'read a credential path (~/.ssh, ~/.netrc)': {
    command: 'cat ~/.ssh/id_ed25519 ~/.netrc 2>&1',
    leaked: (output) => output.includes(KEY_TEXT),
  },
};

/*
 * The gateway must really hold the value in its process environment for the /proc reads to
 * mean anything, so these go through the CLI in a child process, as the reproduction
 * does: `EXECGATE_SECRET_PROBE=... execgate run -- '...'`.
 */
async function cliRun(mode: Mode, sandbox: 'required' | 'off', command: string): Promise<{ output: string; sandboxed: boolean }> {
  const policy = join(tmp.dir, `policy-${sandbox}.yaml`);
  writeFileSync(policy, `version: 1\nsandbox:\n  mode: ${sandbox}\n`);
  const state = join(tmp.dir, 'state');
  const result = await new Promise<string>((resolve, reject) => {
    execFile(process.execPath, [CLI, 'run', '--json', '--mode', mode, '--policy', policy, '--', `STATE=${state}; ${command}`], {
      cwd: work,
      env: { ...env(), EXECGATE_HOME: state },
      encoding: 'utf8',
    }, (error, stdout) => (stdout ? resolve(stdout) : reject(error)));
  });
  const json = JSON.parse(result) as { output?: string; outputPath?: string; sandboxed?: boolean; sandbox?: { sandboxed: boolean } };
  if (mode !== 'background') return { output: json.output ?? '', sandboxed: json.sandbox?.sandboxed === true };
  const path = json.outputPath as string;
  expect(await waitFor(() => existsSync(path) && readFileSync(path, 'utf8').includes('[background process completed'), 20_000)).toBe(true);
  // The detached supervisor still records the end; let it finish before the directory goes.
  const record = getRecordPath(state, (json as { id: string }).id);
  const supervisor = (): number => (JSON.parse(readFileSync(record, 'utf8')) as { supervisorPid: number }).supervisorPid;
  expect(await waitFor(() => !isAlive(supervisor()), 20_000)).toBe(true);
  return { output: readFileSync(path, 'utf8'), sandboxed: json.sandboxed === true };
}

/*
 * A library host (a Node process of its own whose real environment holds the secret, as an MCP
 * server's does) that runs `command` in a warm sandbox: one run first, so that the next sandbox
 * is set up ahead of the command, which then starts in it.
 */
async function warmHostRun(sandbox: 'required' | 'off', command: string): Promise<{ output: string; sandboxed: boolean; warm: boolean }> {
  const state = join(tmp.dir, 'state');
  const script = `
    const { createGateway } = require(${JSON.stringify(join(__dirname, '..', '..', 'dist', 'gateway.js'))});
    const { DEFAULT_POLICY } = require(${JSON.stringify(join(__dirname, '..', '..', 'dist', 'policy', 'effective.js'))});
    const policy = { ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, mode: ${JSON.stringify(sandbox)}, network: 'none' } };
    const gateway = createGateway({ policy, home: ${JSON.stringify(state)}, cwd: ${JSON.stringify(work)} });
    (async () => {
      await gateway.exec({ command: 'true' });
      while (${JSON.stringify(sandbox)} === 'required' && gateway.warmSandboxes.waiting === 0) await new Promise((r) => setTimeout(r, 20));
      const before = gateway.warmSandboxes.warm;
      const result = await gateway.exec({ command: process.argv[1] });
      process.stdout.write(JSON.stringify({ output: result.output, sandboxed: result.sandbox.sandboxed, warm: gateway.warmSandboxes.warm === before + 1 }));
      await gateway.close();
    })();`;
  const stdout = await new Promise<string>((resolve, reject) => {
    execFile(process.execPath, ['-e', script, `STATE=${state}; ${command}`], { cwd: work, env: { ...env(), EXECGATE_HOME: state }, encoding: 'utf8' }, (error, out) => (out ? resolve(out) : reject(error)));
  });
  return JSON.parse(stdout) as { output: string; sandboxed: boolean; warm: boolean };
}

describeSandboxed('the sandbox stops each attack', () => {
  test.each(Object.keys(ATTACKS))('%s (a library host, the run in a warm sandbox)', async (name) => {
    const attack = ATTACKS[name]!;
    const run = await warmHostRun('required', attack.command);
    expect(run).toMatchObject({ sandboxed: true, warm: true });
    expect(attack.leaked(run.output)).toBe(false);
    expect(run.output).not.toContain(PROBE);
  });

  test('control: the same library host unsandboxed leaks its environment (the warm attacks are real)', async () => {
    const attack = ATTACKS['read the gateway environment through /proc/$PPID/environ']!;
    const run = await warmHostRun('off', attack.command);
    expect(run.sandboxed).toBe(false);
    expect(attack.leaked(run.output)).toBe(true);
  });

  describe.each(MODES)('%s mode', (mode: Mode) => {
    test.each(Object.keys(ATTACKS))('%s (through the CLI)', async (name) => {
      const attack = ATTACKS[name]!;
      const run = await cliRun(mode, 'required', attack.command);
      expect(run.sandboxed).toBe(true);
      expect(attack.leaked(run.output)).toBe(false);
      expect(run.output).not.toContain(PROBE);
    });

    test('writes outside the writable set fail and leave nothing on the host; the cwd and /tmp are writable', async () => {
      const gateway = gatewayWith('required');
      try {
        const state = gateway.home;
        const run = await runIn(gateway, mode, [
          `echo planted > ${state}/planted`,
          `echo planted > ${userHome}/planted`,
          'echo planted > /etc/execgate-planted',
          `echo x > ${join(userHome, '.ssh', 'authorized_keys')}`,
          'echo ok > in-cwd && cat in-cwd',
          'echo ok > /tmp/private && cat /tmp/private',
        ].map((c) => `${c} 2>/dev/null;`).join(' '));
        expect(run.output).toContain('ok');
        expect(existsSync(join(state, 'planted'))).toBe(false);
        expect(existsSync(join(userHome, 'planted'))).toBe(false);
        expect(existsSync('/etc/execgate-planted')).toBe(false);
        expect(existsSync(join(userHome, '.ssh', 'authorized_keys'))).toBe(false);
        expect(readFileSync(join(work, 'in-cwd'), 'utf8')).toBe('ok\n');
        expect(existsSync('/tmp/private')).toBe(false);
      } finally {
        await gateway.close();
      }
    });

    test('nothing the command started survives its end: setsid, nohup, env -i, SIGTERM ignored', async () => {
      const gateway = gatewayWith('required');
      const marker = `${4000 + Math.floor(Math.random() * 1000)}.${mode.length}17`;
      try {
        await runIn(gateway, mode, [
          `env -i setsid nohup sleep ${marker} >/dev/null 2>&1 &`,
          `(trap "" TERM HUP; exec -a survivor sleep ${marker}) >/dev/null 2>&1 &`,
          `setsid -f sleep ${marker} >/dev/null 2>&1`,
          `set -m; sleep ${marker} >/dev/null 2>&1 &`,
          'echo started',
        ].join('\n'));
        // The kernel ends the PID namespace with its init; give the reaper a moment (a marker
        // that stays found fails the test after 20 s).
        expect(await waitFor(() => findProcesses(`sleep\0${marker}`).length === 0, 20_000)).toBe(true);
      } finally {
        await gateway.close();
      }
    });
  });

  test('killing a background run ends its whole sandbox, escaped daemons included', async () => {
    const gateway = gatewayWith('required');
    const marker = `${5000 + Math.floor(Math.random() * 1000)}.33`;
    try {
      const started = await gateway.exec({ mode: 'background', command: `env -i setsid nohup sleep ${marker} >/dev/null 2>&1 & echo up > up; sleep ${marker}` });
      expect(await waitFor(() => existsSync(join(work, 'up')) && findProcesses(`sleep\0${marker}`).length === 2, 30_000)).toBe(true);
      await gateway.background.kill(started.id);
      expect(await waitFor(() => findProcesses(`sleep\0${marker}`).length === 0, 20_000)).toBe(true);
    } finally {
      await gateway.close();
    }
  });

  test.each(['sync', 'pty'] as const)('a timeout ends the whole sandbox, a SIGTERM-ignoring shell and escaped daemons included (%s)', async (mode) => {
    const gateway = gatewayWith('required');
    const marker = `${6000 + Math.floor(Math.random() * 1000)}.4${mode.length}`;
    try {
      // The daemon must be up (`up-*` written) before the timeout: sandbox set-up on a loaded
      // machine can take a second or more.
      const result = await gateway.exec({ mode, timeout: 5000, grace: 200, command: `trap "" TERM; env -i setsid nohup sleep ${marker} >/dev/null 2>&1 & echo up > up-${mode}; sleep ${marker}` });
      expect(result.timedOut).toBe(true);
      expect(existsSync(join(work, `up-${mode}`))).toBe(true);
      expect(await waitFor(() => findProcesses(`sleep\0${marker}`).length === 0, 20_000)).toBe(true);
    } finally {
      await gateway.close();
    }
  });

  describe('abstract UNIX sockets (where some D-Bus session buses live)', () => {
    let server: ChildProcess;
    let abstractName: string;
    beforeEach(async () => {
      // No file to hide: only a network namespace keeps a run from connecting. Python, not
      // Node, serves it: Node pads abstract names to the full sun_path length.
      abstractName = `execgate-test-bus-${process.pid}-${Date.now()}`;
      server = spawn('python3', ['-c', [
        'import socket',
        's=socket.socket(socket.AF_UNIX)',
        `s.bind(b'\\0${abstractName}')`,
        's.listen(8)',
        'while True:',
        '  c,_=s.accept(); c.sendall(b"BUS-ANSWERED\\n"); c.close()',
      ].join('\n')], { stdio: 'ignore' });
      expect(await waitFor(() => readFileSync('/proc/net/unix', 'utf8').includes(`@${abstractName}`), 30_000)).toBe(true);
    });
    afterEach(() => {
      server.kill('SIGKILL');
    });
    const connect = (name: string) =>
      `python3 -c "import socket;s=socket.socket(socket.AF_UNIX);s.connect('\\0${name}');print(s.recv(64).decode().strip())" 2>&1 | tail -1`;

    test.each(MODES)('an abstract socket is out of reach with network none (%s)', async (mode) => {
      const gateway = gatewayWith('required');
      try {
        const run = await runIn(gateway, mode, connect(abstractName));
        expect(run.output).not.toContain('BUS-ANSWERED');
        expect(run.output).toMatch(/ConnectionRefused|refused/i);
      } finally {
        await gateway.close();
      }
    });

    test('control: unsandboxed, and with network open, the same probe connects (the exposure SECURITY.md names)', async () => {
      for (const gateway of [gatewayWith('off'), gatewayWith('required', 'open')]) {
        try {
          const run = await runIn(gateway, 'sync', connect(abstractName));
          expect(run.output).toContain('BUS-ANSWERED');
        } finally {
          await gateway.close();
        }
      }
    });
  });

  test('forging audit records: the run cannot touch the log, and `audit verify` sees only real records', async () => {
    const gateway = gatewayWith('required');
    const state = gateway.home;
    let runId = '';
    try {
      const run = await gateway.exec({
        command: `printf '%s\\n' '{"v":1,"seq":999,"event":"exec.finished","runId":"forged"}' >> ${state}/audit.log; cp /dev/null ${state}/audit.log 2>/dev/null; echo done`,
      });
      runId = run.id;
      expect(run.output).toContain('done');
    } finally {
      await gateway.close();
    }
    const records = readFileSync(join(state, 'audit.log'), 'utf8').trim().split('\n').map((line) => JSON.parse(line) as { seq: number; runId?: string });
    expect(records.some((r) => r.runId === 'forged' || r.seq === 999)).toBe(false);
    expect(records.map((r) => r.seq)).toEqual(records.map((_r, i) => i + 1));
    expect(records.some((r) => r.runId === runId)).toBe(true);
    const out = execFileSync(process.execPath, [CLI, 'audit', 'verify'], {
      env: { ...baseEnv(), EXECGATE_HOME: state },
      encoding: 'utf8',
    });
    expect(out).toContain('OK: the chain is intact');
  });

  describe('controls: the same attacks work unsandboxed (sandbox.mode: off)', () => {
    test.each(Object.keys(ATTACKS))('%s', async (name) => {
      const attack = ATTACKS[name]!;
      const run = await cliRun('sync', 'off', attack.command);
      expect(run.sandboxed).toBe(false);
      expect(attack.leaked(run.output)).toBe(true);
    });
  });
});
