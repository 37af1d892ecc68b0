import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { createGateway, type Gateway } from '../../src/gateway';
import { AnsiStripper, stripAnsi } from '../../src/redact/ansi';
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

  test('a multi-line value in an escaped form that keeps its line breaks (html.escape, shlex.quote) is masked after \\n becomes \\r\\n', async () => {
    const cases: Array<[string, string]> = [
      ['<line-one-secret>\nline-two&secret', 'import html,sys; print(html.escape(sys.argv[1]))'],
      ["it's-line-one\nit's-line-two", 'import shlex,sys; print(shlex.quote(sys.argv[1]))'],
    ];
    for (const [value, program] of cases) {
      gateway.refs.set('secret', 'lines', value);
      const result = await gateway.exec({ command: `python3 -c '${program}' <<secret:lines>>`, mode: 'pty' });
      expect(result.exitCode).toBe(0);
      // Masked whole: shlex.quote's own outer quotes may stay around the marker.
      expect(result.stdout).toMatch(/^'?\[REDACTED:secret:lines\]'?\r\n$/);
    }
  });

  test('base64 that a program wraps with CRLF itself arrives as CR CR LF on a terminal, and is masked', async () => {
    const result = await gateway.exec({ command: "printf %s <<secret:pty-token>> | base64 -w 12 | sed 's/$/\\r/'", mode: 'pty' });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toContain('\r\r\n');
    const encoded = Buffer.from(SECRET).toString('base64');
    // At most one character at each end may be shared with what surrounds the value.
    expect(result.stdout.replace(/[\r\n]/g, '')).not.toContain(encoded.slice(1, -2));
    expect(result.stdout).toContain('[REDACTED:secret:pty-token]');
  });

  test('a value holding CRLF arrives as CR CR LF on a terminal, and is masked', async () => {
    for (const value of ['p@ss\r\nw0rd!', 'mixed\nline\r\nends-here']) {
      gateway.refs.set('secret', 'crlf', value);
      const result = await gateway.exec({ command: 'printf "%s\\n" <<secret:crlf>>', mode: 'pty' });
      expect(result.exitCode).toBe(0);
      expect(result.stdout).toBe('[REDACTED:secret:crlf]\r\n');
    }
  });

  test('a value typed into a background PTY run is masked in its echo: control characters in caret notation, a carriage return echoed as CR LF', async () => {
    for (const value of ['Pw9QWERTY\x01ZXCVBN\tmnbv', 'Pw9QWERTYzz\rZXCVBNmnbvcx', 'esc\x1bin-the-typed-value']) {
      gateway.refs.set('secret', 'typed', value);
      const started = await gateway.exec({ mode: 'background', pty: true, command: 'stty -icanon min 1; head -c 200 >/dev/null' });
      await gateway.background.write(started.id, '<<secret:typed>>\n');
      await gateway.background.kill(started.id);
      await gateway.background.wait(started.id, 30_000);
      const output = readFileSync(started.outputPath, 'utf8');
      expect(output).toContain('[REDACTED:secret:typed]');
      for (const part of value.split(/[\x00-\x1f]/)) if (part.length >= 4) expect(output).not.toContain(part);
    }
  });

  test('with ansi: strip, an escaped form of a value that holds an escape sequence (html.escape, shlex.quote) is masked as the stripper leaves it', async () => {
    for (const [value, program] of [['esc\x1b[0m<hidden>&part-of-value', 'import html,sys; print(html.escape(sys.argv[1]))'], ["esc\x1b[0mhidden'part-of-value", 'import shlex,sys; print(shlex.quote(sys.argv[1]))']]) {
      gateway.refs.set('secret', 'esc', value);
      const result = await gateway.exec({ command: `python3 -c "${program}" <<secret:esc>>`, mode: 'pty', ansi: 'strip' });
      expect(result.exitCode).toBe(0);
      expect(result.stdout).toContain('[REDACTED:secret:esc]');
      expect(result.stdout).not.toContain('part-of-value');
    }
  });

  test('with ansi: strip, a value that holds escape sequences or carriage returns itself is masked as the stripper leaves it', async () => {
    for (const value of ['esc-secret\x1bahidden-part-of-value', 'secret-part-one\x1b(Bsecret-part-two', 'cr-in-value\r\nsecond-line-of-it', 'csi-inside\x1b[0mthe-rest-of-it']) {
      gateway.refs.set('secret', 'escaped', value);
      for (const ansi of ['strip', 'keep'] as const) {
        const result = await gateway.exec({ command: 'printf "%s\\n" <<secret:escaped>>', mode: 'pty', ansi });
        expect(result.exitCode).toBe(0);
        // Masked whole, or line by line (a value holding a line break), with nothing of it beside.
        expect(result.stdout.replace(/\r/g, '')).toMatch(/^(\[REDACTED:secret:escaped\]\n)+$/);
      }
    }
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
