import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { createGateway, type Gateway } from '../../src/gateway';
import { AnsiStripper, stripAnsi } from '../../src/run/output/ansi';
import { findByCookie } from '../../src/process/terminate';
import { baseEnv, isAlive, makeTempDir, UNSANDBOXED_POLICY, waitFor } from '../helpers/tmp';
import fc from 'fast-check';

let tmp: ReturnType<typeof makeTempDir>;
let gateway: Gateway;
const SECRET = 'pty-secret-value-0123456789';

beforeEach(() => {
  tmp = makeTempDir();
  gateway = createGateway({ policy: UNSANDBOXED_POLICY, home: join(tmp.dir, 'home'), env: baseEnv(), cwd: tmp.dir });
  gateway.refs.set('secret', 'pty-token', SECRET);
});
afterEach(async () => {
  await gateway.close();
  tmp.cleanup();
});

describe('pty mode', () => {
  test('the command runs on a pseudo-terminal with the requested size and a TERM', async () => {
    const result = await gateway.exec({ command: 'tty; stty size; echo "$TERM"; [ -t 0 ] && echo stdin-is-tty', mode: 'pty', cols: 91, rows: 17 });
    const lines = result.stdout.split('\r\n');
    expect(lines[0]).toMatch(/^\/dev\/pts\/\d+$/);
    expect(lines[1]).toBe('17 91');
    expect(lines[2]).toBe('xterm-256color');
    expect(lines[3]).toBe('stdin-is-tty');
    expect(result.exitCode).toBe(0);
    expect(result.mode).toBe('pty');
  });

  test('exit codes and signals are reported as in sync mode', async () => {
    expect((await gateway.exec({ command: 'exit 7', mode: 'pty' })).exitCode).toBe(7);
    const killed = await gateway.exec({ command: 'kill -9 $$', mode: 'pty' });
    expect(killed.exitCode).toBeNull();
    expect(killed.signal).toBe('SIGKILL');
  });

  test('escape codes are kept by default and stripped on request (CSI, OSC, charset, DCS)', async () => {
    const command = String.raw`printf '\033[1;31mred\033[0m \033]0;title\007\033]8;;http://x\033\\link\033]8;;\033\\ \033(Bplain\033[2K\033[10;5H\033Pdcs\033\\end\n'`;
    const kept = await gateway.exec({ command, mode: 'pty' });
    expect(kept.stdout).toContain('\u001b[1;31mred');
    const stripped = await gateway.exec({ command, mode: 'pty', ansi: 'strip' });
    expect(stripped.stdout).toBe('red link plainend\n');
  });

  test('a resolved value is masked on the terminal stream, also when the program colours it or the terminal wraps lines', async () => {
    const result = await gateway.exec({
      command: 'V=<<secret:pty-token>>; echo "plain $V"; printf "\\033[31m%s\\033[0m\\n" "$V"; printf "%s\\n%s\\n" "${V:0:10}" "${V:10}" >/dev/null',
      mode: 'pty',
    });
    expect(result.stdout).not.toContain(SECRET);
    expect(result.stdout).toContain('plain [REDACTED:secret:pty-token]');
    const stripped = await gateway.exec({ command: 'printf "\\033[31m%s\\033[0m\\n" <<secret:pty-token>>', mode: 'pty', ansi: 'strip' });
    expect(stripped.stdout).toBe('[REDACTED:secret:pty-token]\n');
  });

  test('a multi-line value is masked after the terminal turns \\n into \\r\\n', async () => {
    const pem = '-----BEGIN TEST KEY-----\nAAAAbbbbCCCCddddEEEE\nffffGGGGhhhhIIII\n-----END TEST KEY-----';
    gateway.refs.set('secret', 'pem', pem);
    const result = await gateway.exec({ command: 'printf "%s\\n" <<secret:pem>>', mode: 'pty' });
    for (const line of pem.split('\n')) expect(result.stdout).not.toContain(line);
    expect(result.stdout).toContain('[REDACTED:secret:pem]');
  });

  test('timeouts kill the whole session, escaped children included', async () => {
    const result = await gateway.exec({ command: 'setsid sleep 301 & echo $! > pid; echo ready; sleep 300', mode: 'pty', timeout: 3000, grace: 200 });
    expect(result.timedOut).toBe(true);
    expect(result.stdout).toContain('ready');
    const pid = Number(readFileSync(join(tmp.dir, 'pid'), 'utf8'));
    expect(await waitFor(() => !isAlive(pid), 20_000)).toBe(true);
    expect(findByCookie(result.id)).toEqual([]);
  });
});

describe('AnsiStripper', () => {
  test('removes the same sequences whatever the chunking', () => {
    const sample = Buffer.from('a\u001b[38;5;196mb\u001b]0;t\u0007c\u001b]8;;u\u001b\\d\u001b(Be\u001b=f\u001bPq\u001b\\g\r\nh\u00e9\u001b[0m\n');
    const whole = stripAnsi(sample.toString());
    expect(whole).toBe('abcdefg\nh\u00e9\n');
    fc.assert(
      fc.property(fc.array(fc.nat(sample.length), { maxLength: 12 }), (cuts) => {
        const points = [...new Set(cuts)].sort((a, b) => a - b);
        const stripper = new AnsiStripper();
        const parts: Buffer[] = [];
        let last = 0;
        for (const point of [...points, sample.length]) {
          parts.push(stripper.push(sample.subarray(last, point)));
          last = point;
        }
        parts.push(stripper.flush());
        expect(Buffer.concat(parts).toString()).toBe(whole);
      }),
      { numRuns: 300 },
    );
  });
});
