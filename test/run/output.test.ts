import { readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { BoundedCapture } from '../../src/run/output/capture';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import fc from 'fast-check';

let tmp: ReturnType<typeof makeTempDir>;
let gateway: Gateway;

beforeEach(() => {
  tmp = makeTempDir();
  gateway = createGateway({ home: join(tmp.dir, 'home'), env: baseEnv(), cwd: tmp.dir });
});
afterEach(async () => {
  await gateway.close();
  tmp.cleanup();
});

describe('BoundedCapture', () => {
  test('keeps head and tail exactly, counting what was cut, for any chunking', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 3000 }), fc.array(fc.nat(400), { maxLength: 30 }), fc.integer({ min: 2, max: 900 }), (bytes, cuts, limit) => {
        const data = Buffer.from(bytes);
        const capture = new BoundedCapture(limit);
        let offset = 0;
        for (const size of cuts) {
          capture.push(data.subarray(offset, offset + size));
          offset = Math.min(data.length, offset + size);
        }
        capture.push(data.subarray(offset));
        const headSize = limit - Math.floor(limit / 2);
        const tailSize = Math.floor(limit / 2);
        expect(capture.totalBytes).toBe(data.length);
        if (data.length <= limit) {
          expect(capture.truncated).toBe(false);
          expect(Buffer.concat([capture.head(), capture.tail()]).equals(data)).toBe(true);
        } else {
          expect(capture.truncated).toBe(true);
          expect(capture.head().equals(data.subarray(0, headSize))).toBe(true);
          expect(capture.tail().equals(data.subarray(data.length - tailSize))).toBe(true);
          expect(capture.cutBytes).toBe(data.length - headSize - tailSize);
        }
      }),
      { numRuns: 500 },
    );
  });

  test('keeps the tail exactly when chunks are long enough to be kept by reference, mixed with short ones and views of a larger buffer', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 400_000 }), fc.array(fc.oneof(fc.nat(300), fc.integer({ min: 8000, max: 70_000 })), { maxLength: 40 }), fc.integer({ min: 2, max: 200_000 }), fc.nat(), (length, cuts, limit, seed) => {
        const data = Buffer.alloc(length);
        for (let index = 0; index < length; index++) data[index] = (index * 31 + seed) & 0xff;
        const capture = new BoundedCapture(limit);
        let offset = 0;
        const push = (end: number): void => {
          // Every other chunk a fresh buffer, the others views into `data` (what a redactor may return).
          const view = data.subarray(offset, end);
          capture.push((offset & 1) === 0 ? Buffer.from(view) : view);
          offset = end;
        };
        for (const size of cuts) push(Math.min(data.length, offset + size));
        push(data.length);
        const headSize = limit - Math.floor(limit / 2);
        const tailSize = Math.floor(limit / 2);
        expect(capture.totalBytes).toBe(data.length);
        if (data.length <= limit) {
          expect(Buffer.concat([capture.head(), capture.tail()]).equals(data)).toBe(true);
        } else {
          expect(capture.head().equals(data.subarray(0, headSize))).toBe(true);
          expect(capture.tail().equals(data.subarray(data.length - tailSize))).toBe(true);
          expect(capture.cutBytes).toBe(data.length - headSize - tailSize);
        }
      }),
      { numRuns: 200 },
    );
  });
});

describe('output limits', () => {
  test('head and tail are kept with a notice, and the full redacted output is kept in a file', async () => {
    const command = 'echo FIRST-LINE; head -c 300000 /dev/zero | tr "\\0" "x"; echo; echo LAST-LINE';
    const result = await gateway.exec({ command, maxOutput: 16 * 1024 });
    expect(result.truncated).toEqual({ stdout: true, stderr: false, output: true });
    expect(result.stdout.startsWith('FIRST-LINE\n')).toBe(true);
    expect(result.stdout.endsWith('LAST-LINE\n')).toBe(true);
    const cut = 300000 + 22 - 16 * 1024;
    expect(result.stdout).toContain(`cut ${cut} bytes from the middle`);
    expect(result.fullOutputPath).toBe(join(gateway.home, 'runs', `${result.id}.log`));
    const file = readFileSync(result.fullOutputPath as string, 'utf8');
    expect(file.startsWith(`FIRST-LINE\n${'x'.repeat(300000)}\nLAST-LINE\n`)).toBe(true);
    expect(file).toContain('[execgate: Command exited with code 0.]');
    expect(statSync(result.fullOutputPath as string).mode & 0o777).toBe(0o600);
  });

  test('no file is written when nothing was cut', async () => {
    const result = await gateway.exec({ command: 'echo small' });
    expect(result.fullOutputPath).toBeUndefined();
    expect(result.truncated).toEqual({ stdout: false, stderr: false, output: false });
  });

  test('a child printing 1 GiB does not grow the gateway by more than a few MB over its limit', async () => {
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => { peak = Math.max(peak, process.memoryUsage().rss); }, 20);
    try {
      const result = await gateway.exec({ command: 'head -c 1073741824 /dev/zero', timeout: 120_000 });
      expect(result.bytes.stdout).toBe(1073741824);
      expect(result.truncated.stdout).toBe(true);
      expect(statSync(result.fullOutputPath as string).size).toBeLessThan(gateway.policy.output.maxFileBytes + 4096);
    } finally {
      clearInterval(sampler);
    }
    const growthMb = (peak - before) / 1024 / 1024;
    // Capture limit: 1 MiB per stream + 2 MiB combined; the rest is pipe buffers and GC slack.
    expect(growthMb).toBeLessThan(64);
  }, 120_000);
});
