/*
 * A run's stdout and stderr are pipes (not sockets), read into a buffer used again for every
 * read (src/process/spawner/output-reader.ts). What that must keep: programs that open their
 * own output by name work in every mode; concurrent runs never see each other's bytes (they
 * share the read buffer); everything kept past a read is a copy (captures, the full-output file,
 * the output listener, the redactor's held bytes); and a sandboxed run cannot reach another
 * run's pipe.
 */
import { fstatSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createGateway, type Gateway } from '../../src/gateway';
import { closePipe, getPidNamespace, PipePool, type PipePair } from '../../src/process/spawner/pipes';
import { baseEnv, makeTempDir, UNSANDBOXED_POLICY } from '../helpers/tmp';
import { describeSandboxed, makeGateway, runIn, type Mode } from '../sandbox/helpers';

let tmp: ReturnType<typeof makeTempDir>;
let gateway: Gateway;

beforeEach(() => {
  tmp = makeTempDir();
  gateway = createGateway({ policy: UNSANDBOXED_POLICY, home: join(tmp.dir, 'home'), env: baseEnv(), cwd: tmp.dir, spawner: 'direct' });
});
afterEach(async () => {
  await gateway.close();
  tmp.cleanup();
});

// Opens its output by name four ways; each line says it got through. On a socket every open fails (ENXIO).
const BY_NAME = [
  'test -p /dev/stdout && test -p /dev/stderr && echo fifo-both',
  'echo via-dev-stdout > /dev/stdout',
  'echo via-dev-stderr > /dev/stderr',
  'echo via-proc-fd-1 > /proc/self/fd/1',
  'echo via-tee | tee /dev/stderr',
].join('; ');
const EXPECTED = ['fifo-both', 'via-dev-stdout', 'via-dev-stderr', 'via-proc-fd-1', 'via-tee', 'via-tee'];

/** The lines of `output` but execgate's own closing lines (`[...]`). */
function expectAllThrough(output: string): void {
  expect(output).not.toContain('No such device or address');
  expect(output.split('\n').filter((line) => line !== '' && !line.startsWith('[')).sort()).toEqual([...EXPECTED].sort());
}

describe('output pipes, unsandboxed', () => {
  test.each(['direct', 'helper'] as const)('sync, spawner %s: /dev/stdout, /dev/stderr and /proc/self/fd/1 can be opened, and each stream gets its own', async (spawner) => {
    const through = spawner === 'direct' ? gateway : createGateway({ policy: UNSANDBOXED_POLICY, home: join(tmp.dir, 'helper'), env: baseEnv(), cwd: tmp.dir, spawner });
    try {
      const result = await through.exec({ command: BY_NAME });
      expect(result.exitCode).toBe(0);
      expectAllThrough(result.output);
      expect(result.stdout).toBe('fifo-both\nvia-dev-stdout\nvia-proc-fd-1\nvia-tee\n');
      expect(result.stderr).toBe('via-dev-stderr\nvia-tee\n');
    } finally {
      if (through !== gateway) await through.close();
    }
  });

  test.each(['direct', 'helper'] as const)('background, spawner %s: the same, into its output file', async (spawner) => {
    const through = spawner === 'direct' ? gateway : createGateway({ policy: UNSANDBOXED_POLICY, home: join(tmp.dir, 'helper'), env: baseEnv(), cwd: tmp.dir, spawner });
    try {
      const out = await runIn(through, 'background', BY_NAME);
      expect(out.exitCode).toBe(0);
      expectAllThrough(out.output);
    } finally {
      if (through !== gateway) await through.close();
    }
  });

  test('concurrent runs each get exactly their own bytes (the read buffer is shared), in head, tail and file', async () => {
    const letters = ['a', 'b', 'c', 'd'];
    // 3 MiB each, in writes of odd sizes, stderr lines between: reads of every run interleave.
    const command = (letter: string): string => `for i in 1 2 3; do head -c 1048573 /dev/zero | tr '\\0' ${letter}; echo ${letter.toUpperCase()}-err-$i >&2; done; printf ${letter.toUpperCase()}END`;
    const results = await Promise.all(letters.map((letter) => gateway.exec({ command: command(letter) })));
    results.forEach((result, index) => {
      const letter = letters[index];
      const L = letter.toUpperCase();
      // Only this run's letter, wherever it was kept (compared as a shape: the text is megabytes).
      const only = (text: string): string => text.replace(new RegExp(`${letter}+`, 'g'), '<run>');
      expect(result.bytes.stdout).toBe(3 * 1048573 + 4);
      expect(only(result.stdout.replace(/\n\[\.\.\. execgate cut [^\]]*\]\n/, '|'))).toBe(`<run>|<run>${L}END`);
      expect(result.stderr).toBe([1, 2, 3].map((i) => `${letter.toUpperCase()}-err-${i}\n`).join(''));
      const file = readFileSync(result.fullOutputPath as string, 'latin1');
      // Between the two streams, the order of reads is the event loop's (as it always was).
      const kept = file.slice(0, file.indexOf('\n[execgate:'));
      expect(kept.match(new RegExp(`${L}-err-\\d`, 'g'))).toEqual([1, 2, 3].map((i) => `${L}-err-${i}`));
      expect(only(kept.replace(new RegExp(`${L}-err-\\d\n`, 'g'), ''))).toBe(`<run>${L}END`);
      expect(kept.length).toBe(3 * 1048573 + 4 + 3 * 8);
    });
  }, 60_000);

  test('the output listener keeps what it is given: its chunks, kept to the end, are the output', async () => {
    const kept: Buffer[] = [];
    const command = "for i in $(seq 1 40); do head -c 100000 /dev/zero | tr '\\0' x; printf \"line-$i\\n\"; done";
    const result = await gateway.exec({ command }, { onOutput: (stream, chunk) => { if (stream === 'stdout') kept.push(chunk); } });
    const all = Buffer.concat(kept);
    expect(all.length).toBe(result.bytes.stdout);
    let expected = '';
    for (let i = 1; i <= 40; i++) expected += `${'x'.repeat(100000)}line-${i}\n`;
    expect(all.toString('latin1') === expected).toBe(true);
  }, 30_000);

  test('a secret split across reads is masked every time (the redactor keeps its own copy of held bytes)', async () => {
    const secret = 'split-secret-value-0123456789abcdef';
    gateway.refs.set('secret', 'split', secret);
    // Each repetition puts the value across a 64 KiB boundary of the stream, and its second half
    // arrives in a later write after a pause, so the two halves come in different reads.
    const half = secret.length >> 1;
    const command = `S='<<secret:split>>'; for i in $(seq 1 12); do head -c ${65536 - half} /dev/zero | tr '\\0' y; printf '%s' "\${S:0:${half}}"; sleep 0.02; printf '%s' "\${S:${half}}"; done`;
    const result = await gateway.exec({ command, maxOutput: 8 * 1024 * 1024 });
    expect(result.exitCode).toBe(0);
    expect(result.stdout.includes(secret)).toBe(false);
    expect(result.stdout.includes(secret.slice(0, half))).toBe(false);
    expect(result.redactions).toBe(12);
  }, 30_000);
});

describe('the pipe pool', () => {
  test('gateways made one after another share the stock: no batch is made while it lasts', async () => {
    const pool = new PipePool();
    closeAll(await Promise.all([pool.take()]));
    const before = listBatches();
    expect(before.length).toBeGreaterThan(0);
    for (let i = 0; i < 5; i++) pool.prefill();
    closeAll(await Promise.all([pool.take()]));
    expect(listBatches()).toEqual(before);
  });

  test('a burst larger than a batch gets pipes for every run, each a FIFO of its own', async () => {
    const pool = new PipePool();
    const taken = await Promise.all(Array.from({ length: 300 }, () => pool.take()));
    try {
      expect(taken.every((pair) => pair !== undefined)).toBe(true);
      const inodes = new Set<number>();
      for (const pair of taken.flatMap((pairs) => pairs!)) {
        const stat = fstatSync(pair.read);
        expect(stat.isFIFO()).toBe(true);
        expect(fstatSync(pair.write).ino).toBe(stat.ino);
        inodes.add(stat.ino);
      }
      expect(inodes.size).toBe(600);
    } finally {
      for (const pairs of taken) pairs?.forEach(closePipe);
    }
  }, 30_000);
});

/** This process's batch directories. */
function listBatches(): string[] {
  return readdirSync('/tmp').filter((name) => name.startsWith(`execgate-pipes-${getPidNamespace()}-${process.pid}-`)).sort();
}

function closeAll(taken: Array<[PipePair, PipePair] | undefined>): void {
  for (const pairs of taken) pairs?.forEach(closePipe);
}

describeSandboxed('output pipes, sandboxed', () => {
  let sandboxed: Gateway;
  beforeEach(() => {
    sandboxed = makeGateway({ home: join(tmp.dir, 'sandboxed'), env: baseEnv(), cwd: tmp.dir, spawner: 'direct' });
  });
  afterEach(async () => {
    await sandboxed.close();
  });

  test.each([['sync', 'direct'], ['background', 'direct'], ['sync', 'helper'], ['background', 'helper']] as Array<[Mode, 'direct' | 'helper']>)('%s, spawner %s: /dev/stdout, /dev/stderr and /proc/self/fd/1 can be opened (cold, then warm)', async (mode, spawner) => {
    const through = spawner === 'direct' ? sandboxed : makeGateway({ home: join(tmp.dir, 'sandboxed-helper'), env: baseEnv(), cwd: tmp.dir, spawner });
    try {
      for (let round = 0; round < 2; round++) {
        const out = await runIn(through, mode, BY_NAME);
        expect(out.sandboxed).toBe(true);
        expect(out.exitCode).toBe(0);
        expectAllThrough(out.output);
      }
    } finally {
      if (through !== sandboxed) await through.close();
    }
  }, 60_000);

  test('pty: /dev/stdout is the terminal, as before', async () => {
    const out = await runIn(sandboxed, 'pty', 'echo via-dev-stdout > /dev/stdout; test -t 1 && echo tty');
    expect(out.output.replace(/\r/g, '')).toBe('via-dev-stdout\ntty\n');
  }, 30_000);

  test('a sandboxed run cannot write into another run\'s output pipe, nor find the pipes being made', async () => {
    const victim = await sandboxed.exec({ command: 'for i in $(seq 1 30); do echo victim-$i; sleep 0.05; done', mode: 'background' });
    // Every pipe it can name, by /proc and by the directory pipes are made in.
    const attack = [
      // An open for writing waits for a reader: each try is bounded.
      'n=0; for f in /proc/[0-9]*/fd/*; do if [ -p "$f" ]; then n=$((n+1)); timeout 2 sh -c \'echo INJECTED-BY-ATTACKER > "$1"\' _ "$f" 2>/dev/null & fi; done; wait',
      'ls -d /tmp/execgate-pipes-* 2>/dev/null && echo FOUND-PIPE-DIR',
      'echo tried $n',
    ].join('\n');
    const attacker = await sandboxed.exec({ command: attack, timeout: 20_000 });
    expect(attacker.sandbox.sandboxed).toBe(true);
    expect(attacker.stdout).toMatch(/tried [1-9]/);
    expect(attacker.stdout).not.toContain('FOUND-PIPE-DIR');
    await sandboxed.background.wait(victim.id, 30_000);
    const output = readFileSync(victim.outputPath, 'utf8');
    expect(output).toContain('victim-30');
    expect(output).not.toContain('INJECTED');
  }, 60_000);
});
