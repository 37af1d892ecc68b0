import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { createSentinel, MARKER_PLACEHOLDER, stripSentinel, stripSentinelFromFile, takeSentinel } from '../../src/mcp/sentinel';
import { cutMiddle, MCP_OUTPUT_KEEP, MCP_OUTPUT_LIMIT } from '../../src/mcp/truncate';
import { makeTempDir } from '../helpers/tmp';

function runWith(shell: string, command: string, cwd = '/tmp'): { stdout: string; status: number | null; marker: string } {
  const { marker, prologue } = createSentinel();
  const result = spawnSync(shell, ['-c', `${prologue}; ${command}`], { cwd, encoding: 'utf8' });
  return { stdout: result.stdout, status: result.status, marker };
}

describe('the cwd sentinel', () => {
  test('each call draws a fresh random marker, across refills of the pool markers are cut from', () => {
    // 600 markers: more than two fills of the pool (256 markers each).
    const markers = new Set(Array.from({ length: 600 }, () => createSentinel().marker));
    expect(markers.size).toBe(600);
    for (const marker of markers) {
      expect(marker).toMatch(/^__EXECGATE_CWD_[0-9a-f]{32}__$/);
      // A used part of the pool is cleared: a marker cut from cleared bytes would be all zeros.
      expect(marker).not.toMatch(/^__EXECGATE_CWD_0{32}__$/);
    }
  });

  test.each(['/bin/bash', '/bin/sh'])('%s: the trap reports the final directory and keeps the exit status', (shell) => {
    for (const [command, status, cwd] of [
      ['cd /usr', 0, '/usr'],
      ['cd /usr; false', 1, '/usr'],
      ['cd /usr && exit 42', 42, '/usr'],
      ['echo -n partial; cd /', 0, '/'],
      // Any name Linux allows: a directory whose name holds newlines (and the marker's own shape).
      ['d=$(mktemp -d); mkdir "$d/a\nb\n" && cd "$d/a\nb\n"', 0, /^\/tmp\/tmp\.\w+\/a\nb\n$/],
    ] as const) {
      const run = runWith(shell, command);
      expect(run.status).toBe(status);
      const parsed = takeSentinel(run.stdout, run.marker);
      if (typeof cwd === 'string') expect(parsed.cwd).toBe(cwd);
      else expect(parsed.cwd).toMatch(cwd);
      expect(parsed.text).toBe(command.startsWith('echo -n') ? 'partial' : '');
    }
  });

  test('a block that is not the last lines of stdout is removed but not believed', () => {
    const marker = createSentinel().marker;
    const parsed = takeSentinel(`out\n\n${marker}\n/usr\0late output\n`, marker);
    expect(parsed.cwd).toBeUndefined();
    expect(parsed.text).toBe('out\nlate output\n');
  });

  test('copies of the marker elsewhere are masked', () => {
    const marker = createSentinel().marker;
    const parsed = takeSentinel(`trap -- 'printf ${marker}' EXIT\n\n${marker}\n/srv\0`, marker);
    expect(parsed.cwd).toBe('/srv');
    expect(parsed.text).toBe(`trap -- 'printf ${MARKER_PLACEHOLDER}' EXIT\n`);
    expect(stripSentinel(`a${marker}b\n${marker}\n/x\0err\n`, marker)).toBe(`a${MARKER_PLACEHOLDER}berr\n`);
  });

  test('property: output that does not know the marker never sets the directory, and comes back unchanged', () => {
    const marker = createSentinel().marker;
    const fakeMarker = fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: 32, maxLength: 32 }).map((hex: string) => `__EXECGATE_CWD_${hex}__`);
    const piece = fc.oneof(fc.string(), fc.constantFrom('\n', '/etc\n', '__EXECGATE_CWD_'), fakeMarker.map((m: string) => `\n${m}\n/etc\0`));
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 12 }), (pieces) => {
        const output = pieces.join('');
        fc.pre(!output.includes(marker));
        const parsed = takeSentinel(output, marker);
        expect(parsed.cwd).toBeUndefined();
        expect(parsed.text).toBe(output);
        // With the real block appended, exactly the output and the real directory come back.
        const real = takeSentinel(`${output}\n${marker}\n/real/dir\0`, marker);
        expect(real).toEqual({ text: output, cwd: '/real/dir', removedBytes: Buffer.byteLength(`\n${marker}\n/real/dir\0`) });
      }),
      { numRuns: 300 },
    );
  });

  test('the block is removed from the tail of a spilled output file', () => {
    const tmp = makeTempDir('execgate-mcp-sentinel-');
    try {
      const marker = createSentinel().marker;
      const file = join(tmp.dir, 'run.log');
      const body = 'x'.repeat(300_000);
      writeFileSync(file, `${body}\n${marker}\n/usr\0stderr after\n[execgate: Command exited with code 0.]\n`);
      stripSentinelFromFile(file, marker);
      expect(readFileSync(file, 'utf8')).toBe(`${body}stderr after\n[execgate: Command exited with code 0.]\n`);
    } finally {
      tmp.cleanup();
    }
  });
});

describe('the 128 KB middle cut', () => {
  test('nothing is cut up to the limit', () => {
    expect(cutMiddle('a'.repeat(MCP_OUTPUT_LIMIT), MCP_OUTPUT_LIMIT, undefined)).toBeUndefined();
  });

  test('past the limit the first and last 4 KB are kept, with a notice naming the full output', () => {
    const text = `${'h'.repeat(MCP_OUTPUT_KEEP)}${'Z'.repeat(MCP_OUTPUT_LIMIT)}${'t'.repeat(MCP_OUTPUT_KEEP)}`;
    const cut = cutMiddle(text, text.length, '/state/runs/run_1.log')!;
    expect(cut.startsWith('h'.repeat(MCP_OUTPUT_KEEP))).toBe(true);
    expect(cut.endsWith('t'.repeat(MCP_OUTPUT_KEEP))).toBe(true);
    expect(cut).not.toContain('Z');
    expect(cut).toContain(`cut ${MCP_OUTPUT_LIMIT} bytes from the middle of this output; full output: /state/runs/run_1.log`);
  });

  test('cuts fall on character boundaries', () => {
    const text = 'é'.repeat(MCP_OUTPUT_LIMIT);
    const cut = cutMiddle(text, Buffer.byteLength(text), undefined)!;
    expect(cut).not.toContain('\ufffd');
    const [head, tail] = cut.split(/\n\[\.\.\. execgate cut \d+ bytes[^\n]*\n/);
    expect(Buffer.byteLength(head!)).toBeLessThanOrEqual(MCP_OUTPUT_KEEP);
    expect(Buffer.byteLength(tail!)).toBeLessThanOrEqual(MCP_OUTPUT_KEEP);
  });
});
