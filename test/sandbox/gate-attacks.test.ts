/*
 * Attacks on what stands between a run's set-up and its program: the cold gate (gate.sh: NUL once
 * waiting, the exact line `go`, inherited descriptors found and closed inside the sandbox, the
 * network namespace compared before the program starts), the parked unsandboxed bash that closes
 * its inherited descriptors itself (process/park.ts), and warm sandboxes set up after a result.
 *
 * What a command may try: keep a descriptor the gateway holds without close-on-exec (a user's
 * `execgate run ... 200<file`, another run's terminal master) in every mode, sandboxed cold and
 * warm and unsandboxed, parked or not, through each spawner, with bash, sh, and a shell of its own
 * that is merely named bash; start before `go` (input to the gate that is not the line); run in
 * a network namespace other than the gateway's shared one once the holder's pid names another
 * process.
 */
import { execFile, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { createGateway, type Gateway } from '../../src/gateway';
import { CLOSE_FDS } from '../../src/process/inherited-fds';
import { getBashGateScript, getGateScript } from '../../src/process/programs';
import { baseEnv, makeTempDir, UNSANDBOXED_POLICY, waitFor } from '../helpers/tmp';
import { describeSandboxed, makeGateway } from './helpers';

const DIST = join(__dirname, '..', '..', 'dist');
const PYTHON = ['/usr/bin/python3', '/bin/python3'].find((path) => existsSync(path));
const RUNS = Number(process.env.EXECGATE_ATTACK_RUNS ?? 0);

let tmp: ReturnType<typeof makeTempDir>;
beforeEach(() => { tmp = makeTempDir('execgate-gateatk-'); });
afterEach(() => tmp.cleanup());

/** A "shell" of the run's own, named bash: a script that uses whatever descriptors it was given. */
function fakeBash(dir: string, body: string): string {
  const path = join(dir, 'bash');
  writeFileSync(path, `#!/bin/sh\n${body}\n`);
  chmodSync(path, 0o755);
  return path;
}

(PYTHON ? describe : describe.skip)('another run\'s terminal master (held without close-on-exec while a PTY run lasts)', () => {
  let gateway: Gateway;
  beforeEach(() => {
    // The audit log on (the default): unsandboxed sync runs on pipes start parked.
    gateway = createGateway({ policy: UNSANDBOXED_POLICY, home: join(tmp.dir, 'home'), env: baseEnv(), cwd: tmp.dir, spawner: 'direct' });
  });
  afterEach(async () => { await gateway.close(); });

  test('a parked run whose shell is a script named bash cannot type into it', async () => {
    // It writes to every terminal master it holds; before the fix it held the PTY run's and typed there.
    const shell = fakeBash(tmp.dir, `exec ${PYTHON} -c '
import os
for n in os.listdir("/proc/self/fd"):
    try:
        if os.readlink("/proc/self/fd/" + n) == "/dev/ptmx":
            os.write(int(n), b"INJECTED-INTO-PTY\\n"); print("wrote", n)
    except OSError:
        pass
print("listed", " ".join(sorted(os.listdir("/proc/self/fd"), key=int)))'`);
    const pty = gateway.exec({ command: 'read -t 4 line; echo "got:$line"', mode: 'pty' });
    // The PTY run is going (its master open here) before the other starts.
    expect(await waitFor(() => readdirSync('/proc/self/fd').some((fd) => { try { return readlinkSync(`/proc/self/fd/${fd}`) === '/dev/ptmx'; } catch { return false; } }), 10_000)).toBe(true);
    const attacker = await gateway.exec({ command: 'true', shell });
    expect(attacker.stdout).not.toContain('wrote');
    expect(attacker.stdout).toMatch(/^listed 0 1 2 3\n$/);
    const victim = await pty;
    expect(victim.output).not.toContain('INJECTED');
  }, 60_000);
});

/*
 * A node process started holding descriptors 5, 9 and 200 (a file) without close-on-exec, as after
 * `execgate run ... 200<file`: every kind of gateway, shell and mode it can run, each run listing
 * its own and its shell's descriptors and reading 200 by /proc.
 */
const MATRIX = `
const { createGateway } = require(process.argv[1]);
const { DEFAULT_POLICY } = require(process.argv[1] + '/policy/effective');
const [, , dir, fake, sandboxOk] = process.argv;
const policy = (mode) => ({ ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, mode } });
const kinds = [
  ['off-parked', { policy: policy('off') }],
  ['off-unparked', { policy: policy('off'), audit: false }],
  ['off-helper', { policy: policy('off'), spawner: 'helper' }],
  ...(sandboxOk === '1' ? [
    ['cold', { policy: policy('required'), warmSandboxes: 0 }],
    ['warm', { policy: policy('required'), warmSandboxes: 1 }],
    ['sandboxed-helper', { policy: policy('required'), spawner: 'helper', warmSandboxes: 0 }],
  ] : []),
];
const command = 'printf "fds=%s " "$(ls /proc/self/fd | tr "\\\\n" " ")"; for f in /proc/$$/fd/*; do printf "%s " "\${f##*/}"; done; cat /proc/self/fd/200 /proc/$$/fd/200 2>/dev/null; echo';
(async () => {
  const out = [];
  for (const [kind, options] of kinds) {
    const gateway = createGateway({ spawner: 'direct', ...options, home: dir + '/home-' + kind, env: { PATH: '/usr/bin:/bin', EXECGATE_KEYRING: 'off' }, cwd: dir });
    for (const shell of ['/bin/bash', '/bin/sh', fake]) {
      for (const mode of ['sync', 'sync', 'background', 'pty']) {
        if (shell === fake && mode !== 'sync') continue;
        let text;
        try {
          if (mode === 'background') {
            const started = await gateway.exec({ command, shell, mode });
            await gateway.background.wait(started.id, 30000);
            text = require('fs').readFileSync(started.outputPath, 'utf8').split('\\n[')[0];
          } else {
            text = (await gateway.exec({ command, shell, mode })).output;
          }
        } catch (error) {
          text = 'ERROR ' + error.code;
        }
        out.push({ kind, shell, mode, text });
      }
    }
    await gateway.close();
  }
  process.stdout.write(JSON.stringify(out));
})();
`;

describe('descriptors the gateway inherited (5, 9, 200 without close-on-exec)', () => {
  test('reach no command: sandboxed cold, warm and through the helper, unsandboxed parked, unparked and through the helper; bash, sh, a script named bash; sync, background, PTY', async () => {
    const held = join(tmp.dir, 'held.key');
    writeFileSync(held, 'HELD-KEY-MATERIAL-4242\n');
    const fake = fakeBash(tmp.dir, 'printf "fds=%s " "$(ls /proc/self/fd | tr "\\n" " ")"; cat /proc/self/fd/200 2>/dev/null; echo');
    const { checkPlatform } = await import('../../src/sandbox');
    const stdout = await new Promise<string>((resolve, reject) => {
      execFile('/bin/bash', ['-c', `${CLOSE_FDS}; exec 5</dev/null 9<>/dev/null 200<"$1"; shift; exec "$@"`, 'holder', held,
        process.execPath, '-e', MATRIX, DIST, tmp.dir, fake, checkPlatform().ok ? '1' : '0'],
      { cwd: tmp.dir, env: baseEnv(), encoding: 'utf8', timeout: 110_000, maxBuffer: 1 << 24 }, (error, out) => (out ? resolve(out) : reject(error)));
    });
    const rows = JSON.parse(stdout) as Array<{ kind: string; shell: string; mode: string; text: string }>;
    expect(rows.length).toBeGreaterThanOrEqual(27);
    // Every number a run printed is one of its descriptors (its own listing, then its shell's).
    const leaks = rows.filter((row) => !row.text.startsWith('fds=') || row.text.includes('HELD-KEY') || (row.text.match(/\d+/g) ?? []).some((fd) => ['5', '9', '200'].includes(fd)));
    expect(leaks).toEqual([]);
  }, 120_000);
});

/*
 * The gate's word: the program starts on the line `go` and on nothing else. (sh's `read` drops NUL
 * bytes, so `g\0o` reads as `go`; only the gateway writes the gate's input before `go`, so no run
 * can send it.)
 */
describe('the cold gate on any input', () => {
  const gate = (input: Buffer): { status: number | null; stdout: string; stderr: string } => {
    const run = spawnSync(PYTHON ?? '/usr/bin/python3', ['-c', 'import os, sys\nos.closerange(3, 65536)\nos.execv(sys.argv[1], sys.argv[1:])',
      '/bin/sh', '-c', getGateScript(), 'execgate-gate', getBashGateScript(CLOSE_FDS), 'keep', '/bin/sh', '-c', 'printf RAN; cat'], { input, encoding: 'latin1' });
    return { status: run.status, stdout: run.stdout, stderr: run.stderr };
  };

  (PYTHON ? test : test.skip)('runs the program only on a first line that reads `go`, says only NUL before it, and passes the rest on', () => {
    const word = fc.constantFrom('go', 'g', 'o', 'GO', ' ', '\r', '\\', '\0', '\n', 'go\n', 'x');
    fc.assert(fc.property(fc.array(word, { maxLength: 6 }), fc.uint8Array({ maxLength: 8 }), (words, rest) => {
      const head = Buffer.from(words.join(''), 'latin1');
      const input = Buffer.concat([head, Buffer.from(rest)]);
      const run = gate(input);
      expect(run.stderr).toBe('\0');
      const newline = input.indexOf(0x0a);
      const line = newline < 0 ? undefined : input.subarray(0, newline).toString('latin1').replace(/\0/g, '');
      if (line === 'go') {
        expect(run.status).toBe(0);
        expect(run.stdout).toBe(`RAN${input.subarray(newline + 1).toString('latin1')}`);
      } else {
        expect(run.status).toBe(125);
        expect(run.stdout).toBe('');
      }
    }), { numRuns: RUNS || 150 });
  });
});

/** Pids of this process's descendants whose environment carries `marker`. */
function descendantsWith(marker: string): number[] {
  const parents = new Map<number, number>();
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'latin1');
      parents.set(Number(entry), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch { /* gone */ }
  }
  const mine = (pid: number): boolean => {
    for (let at = parents.get(pid); at !== undefined && at > 1; at = parents.get(at)) if (at === process.pid) return true;
    return false;
  };
  return [...parents.keys()].filter((pid) => {
    try {
      return mine(pid) && readFileSync(`/proc/${pid}/environ`, 'latin1').includes(marker);
    } catch {
      return false;
    }
  });
}

// Makes PID (argv 1) a process in the network namespace HOST (argv 2): writes ns_last_pid and
// forks at once, again and again, until a child gets it (the others exit); prints the pid of the
// child that stays (a sleep). Gives up after 30 s, saying so on stderr.
const SQUAT = `
import os, sys, time
pid, host = int(sys.argv[1]), sys.argv[2]
def held():
    try: return os.readlink('/proc/%d/ns/net' % pid) == host
    except OSError: return False
deadline = time.monotonic() + 30
while not held():
    if time.monotonic() > deadline: sys.exit('pid %d not taken in 30 s' % pid)
    if os.path.exists('/proc/%d' % pid):
        time.sleep(0.005)
        continue
    with open('/proc/sys/kernel/ns_last_pid', 'w') as f: f.write(str(pid - 1))
    child = os.fork()
    if child == 0:
        if os.getpid() == pid: os.execv('/bin/sleep', ['sleep', '60'])
        os._exit(0)
    if child == pid:
        print(child, flush=True)
        break
    os.waitpid(child, 0)
`;

describeSandboxed('the shared network namespace', () => {
  const root = process.getuid?.() === 0 && existsSync('/proc/sys/kernel/ns_last_pid');

  (root ? test : test.skip)('its holder killed and its pid given to a process in the host\'s network: the next run is not in the host\'s network', async () => {
    const gateway = makeGateway({ home: join(tmp.dir, 'home'), env: baseEnv(), cwd: tmp.dir, spawner: 'direct', warmSandboxes: 0 });
    const host = readlinkSync('/proc/self/ns/net');
    const squatters: number[] = [];
    try {
      const first = await gateway.exec({ command: 'readlink /proc/self/ns/net' });
      const shared = first.stdout.trim();
      expect(shared).toMatch(/^net:\[\d+\]$/);
      expect(shared).not.toBe(host);
      // The holder: the process of this gateway's tree, in the shared namespace, named by its cookie.
      const holders = descendantsWith('EXECGATE_RUN_ID=net_').filter((pid) => { try { return readlinkSync(`/proc/${pid}/ns/net`) === shared; } catch { return false; } });
      expect(holders.length).toBeGreaterThan(0);
      // A short-lived process of the holder's tree (a probe) may end between the listing and the
      // kill: the pid squatted is that of a process this test itself killed.
      const killed = holders.filter((holder) => {
        try { process.kill(holder, 'SIGKILL'); return true; } catch (error) {
          if ((error as NodeJS.ErrnoException).code === 'ESRCH') return false;
          throw error;
        }
      });
      expect(killed.length).toBeGreaterThan(0);
      const pid = Math.min(...killed);
      // Free once reaped, not once dead: a zombie has no namespaces to read but keeps its pid,
      // which the kernel then skips (every squatter below would get another one).
      expect(await waitFor(() => !existsSync(`/proc/${pid}`), 10_000)).toBe(true);
      // The same pid, in the host's network: the next pid the kernel gives, as root can set it.
      // Another process of this machine (a test file running beside this one, a thread) may take
      // it between the write and the fork, so a small program writes and forks back to back until
      // its child has that pid (Node's spawn leaves milliseconds between them: on a loaded machine
      // 400 tries were seen to lose every time). A process in the host's network holding it is the
      // premise too, whoever started it; one that holds it elsewhere is waited out.
      const inHostNetwork = (): boolean => { try { return readlinkSync(`/proc/${pid}/ns/net`) === host; } catch { return false; } };
      const squat = spawnSync('python3', ['-c', SQUAT, String(pid), host], { encoding: 'utf8', timeout: 60_000 });
      for (const line of squat.stdout.split('\n')) if (/^\d+$/.test(line)) squatters.push(Number(line));
      expect(squat.stderr).toBe('');
      expect(inHostNetwork()).toBe(true);
      for (const mode of ['sync', 'background'] as const) {
        let seen: string;
        try {
          if (mode === 'sync') seen = (await gateway.exec({ command: 'readlink /proc/self/ns/net' })).stdout.trim();
          else {
            const started = await gateway.exec({ command: 'readlink /proc/self/ns/net', mode });
            await gateway.background.wait(started.id, 30_000);
            seen = readFileSync(started.outputPath, 'utf8').split('\n')[0];
          }
        } catch (error) {
          seen = (error as { code?: string }).code ?? String(error);
        }
        // Refused (the check), or run in a namespace that is not the host's (a new holder).
        expect(seen === 'EXECGATE_ERR_SANDBOX_MISMATCH' || /^net:\[\d+\]$/.test(seen)).toBe(true);
        expect(seen).not.toBe(host);
      }
    } finally {
      for (const squatter of squatters) { try { process.kill(squatter, 'SIGKILL'); } catch { /* gone */ } }
      await gateway.close();
    }
  }, 90_000);
});
