/*
 * Attacks on a run's output path: the FIFO-made pipes (src/process/spawner/pipes.ts), the one
 * read buffer every reader of the process shares (output-reader.ts), and what keeps bytes past a
 * read (the redactor, the head and tail captures, the full-output file, the output listener).
 *
 * What a command may try: get its bytes into another run's result or another run's into its own
 * (concurrent runs of one gateway and of two gateways in one process share the read buffer); get
 * a value out unmasked by splitting it across reads, across chunks written apart, between binary
 * bytes; lose, duplicate or reorder its own bytes (huge bursts while another run reads); write
 * after its shell has exited; close its output early or keep it open from a child; reach another
 * run's pipe from a sandbox. And what a process of the same user outside every sandbox can do to
 * the batch directory the pipes wait in (SECURITY.md: it may read or add to a run's output; it
 * must not make the gateway start a command it then reports as not started), and what a killed
 * gateway leaves there.
 *
 * The property tests compare every byte against a reference: what the run wrote, with the value
 * replaced by its mask, against the listener's chunks, the result's head and tail, its byte
 * counts and the full-output file. Counts here keep the file well under a minute; larger counts
 * were run by hand (EXECGATE_ATTACK_RUNS=N).
 */
import { execFile, spawn } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { createGateway, type Gateway } from '../../src/gateway';
import { getPidNamespace } from '../../src/process/spawner/pipes';
import { baseEnv, isAlive, makeTempDir, UNSANDBOXED_POLICY, waitFor } from '../helpers/tmp';
import { describeSandboxed, makeGateway } from '../sandbox/helpers';

const RUNS = Number(process.env.EXECGATE_ATTACK_RUNS ?? 0);
const DIST = join(__dirname, '..', '..', 'dist');

const SECRET = 'Qv7-split-Secret-9d2f';
const MASK = Buffer.from('[REDACTED:secret:attack]');

let tmp: ReturnType<typeof makeTempDir>;
beforeEach(() => { tmp = makeTempDir('execgate-outatk-'); });
afterEach(() => tmp.cleanup());

/** One piece a run writes with one `cat`: its bytes, the stream, and a pause after it. */
interface Piece { readonly bytes: Uint8Array; readonly stream: 1 | 2; readonly pause: boolean }
/** A run: its pieces, and whether a value is split across the boundary after piece `split`. */
interface Plan { readonly pieces: Piece[]; readonly maxOutput: number }

// Random bytes, binary included, that cannot hold the value or a start of it (the value's first byte is Q).
const bytesArb = fc.uint8Array({ minLength: 0, maxLength: 90_000 }).map((a) => a.map((b) => (b === 0x51 ? 0x52 : b)));

const pieceArb: fc.Arbitrary<Piece> = fc.record({
  bytes: fc.oneof(
    bytesArb,
    // The value inside, whole or split across this piece's end and the next one's start.
    fc.tuple(bytesArb, bytesArb, fc.integer({ min: 0, max: SECRET.length })).map(([a, b, cut]) =>
      Uint8Array.from([...a, 0x01, ...Buffer.from(SECRET.slice(0, cut))].concat(cut === SECRET.length ? [0x01, ...b] : []))),
    fc.tuple(fc.integer({ min: 1, max: SECRET.length }), bytesArb).map(([from, b]) => Uint8Array.from([...Buffer.from(SECRET.slice(from)), 0x01, ...b])),
  ),
  stream: fc.constantFrom(1 as const, 2 as const),
  pause: fc.boolean(),
});
const planArb: fc.Arbitrary<Plan> = fc.record({
  pieces: fc.array(pieceArb, { minLength: 1, maxLength: 6 }),
  maxOutput: fc.constantFrom(1024, 4096, 65_536, 1_048_576),
});

/** The bytes each stream carries once masked: the reference. */
function expected(plan: Plan): { 1: Buffer; 2: Buffer } {
  const out = { 1: [] as Buffer[], 2: [] as Buffer[] };
  for (const piece of plan.pieces) out[piece.stream].push(Buffer.from(piece.bytes));
  const mask = (parts: Buffer[]): Buffer => {
    const all = Buffer.concat(parts);
    const pieces: Buffer[] = [];
    let from = 0;
    for (let at = all.indexOf(SECRET); at >= 0; at = all.indexOf(SECRET, from)) {
      pieces.push(all.subarray(from, at), MASK);
      from = at + SECRET.length;
    }
    pieces.push(all.subarray(from));
    return Buffer.concat(pieces);
  };
  return { 1: mask(out[1]), 2: mask(out[2]) };
}

/** The command: one `cat` per piece into its stream, a pause where asked. Pieces are files in `dir`. */
function command(plan: Plan, dir: string, name: string): string {
  // The value is named (resolved for the run, so its redactor masks it); the pieces print it.
  return ': <<secret:attack>>; ' + plan.pieces.map((piece, index) => {
    const file = join(dir, `${name}-${index}`);
    writeFileSync(file, piece.bytes);
    return `cat '${file}' >&${piece.stream}${piece.pause ? '; sleep 0.02' : ''}`;
  }).join('; ');
}

/** head + tail of `bytes` as the result's text shows them (capture.ts), independently computed. */
function checkText(text: string, bytes: Buffer, maxOutput: number): void {
  const tailLimit = Math.floor(maxOutput * 0.5);
  const headLimit = maxOutput - tailLimit;
  if (bytes.length <= maxOutput) {
    expect(text).toBe(bytes.toString('utf8'));
    return;
  }
  const head = bytes.subarray(0, headLimit).toString('utf8');
  const tail = bytes.subarray(bytes.length - tailLimit).toString('utf8');
  expect(text.startsWith(head)).toBe(true);
  expect(text.endsWith(tail)).toBe(true);
  expect(text.slice(head.length, text.length - tail.length)).toMatch(/execgate cut/);
}

async function runPlans(gateways: Gateway[], plans: Plan[], dir: string): Promise<void> {
  const results = await Promise.all(plans.map(async (plan, index) => {
    const chunks = { 1: [] as Buffer[], 2: [] as Buffer[] };
    const result = await gateways[index % gateways.length].exec(
      { command: command(plan, dir, `run${index}`), maxOutput: plan.maxOutput },
      { onOutput: (stream, chunk) => chunks[stream === 'stdout' ? 1 : 2].push(chunk) },
    );
    return { plan, result, chunks };
  }));
  for (const { plan, result, chunks } of results) {
    const want = expected(plan);
    expect(result.exitCode).toBe(0);
    // The listener's chunks, kept to the end: exactly this run's bytes, masked, in order.
    expect(Buffer.concat(chunks[1]).equals(want[1])).toBe(true);
    expect(Buffer.concat(chunks[2]).equals(want[2])).toBe(true);
    expect(result.bytes).toEqual({ stdout: want[1].length, stderr: want[2].length });
    checkText(result.stdout, want[1], plan.maxOutput);
    checkText(result.stderr, want[2], plan.maxOutput);
    for (const text of [result.stdout, result.stderr, result.output]) expect(text.includes(SECRET)).toBe(false);
    if (result.fullOutputPath !== undefined) {
      // The file: both streams in read order, then execgate's closing lines.
      const file = readFileSync(result.fullOutputPath);
      const kept = file.subarray(0, want[1].length + want[2].length);
      expect(file.subarray(kept.length).toString('latin1')).toMatch(/^\n\[execgate:/);
      if (want[2].length === 0) expect(kept.equals(want[1])).toBe(true);
      else if (want[1].length === 0) expect(kept.equals(want[2])).toBe(true);
      else expect(kept.includes(SECRET)).toBe(false);
    }
  }
}

describe('output of concurrent runs against a reference (unsandboxed, two gateways in one process, direct and helper)', () => {
  let gateways: Gateway[];
  beforeEach(() => {
    // One spawns in this process, one through the spawn helper (its runs' pipes opened there by /proc).
    gateways = (['direct', 'helper'] as const).map((spawner) => {
      const gateway = createGateway({ policy: UNSANDBOXED_POLICY, home: join(tmp.dir, `home-${spawner}`), env: baseEnv(), cwd: tmp.dir, spawner });
      gateway.refs.set('secret', 'attack', SECRET);
      return gateway;
    });
  });
  afterEach(async () => { await Promise.all(gateways.map((gateway) => gateway.close())); });

  test('binary output, a value split across reads and pieces, head, tail, counts and file: each run exactly its own bytes', async () => {
    const dir = join(tmp.dir, 'pieces');
    mkdirSync(dir);
    await fc.assert(fc.asyncProperty(fc.array(planArb, { minLength: 2, maxLength: 4 }), (plans) => runPlans(gateways, plans, dir)), { numRuns: RUNS || 6 });
  }, 90_000);

  test('a burst of 24 MiB beside runs that print a value a byte at a time: no byte crosses, none lost or reordered', async () => {
    // The burst fills the shared buffer on every read while the others' single bytes arrive between.
    const burst = gateways[0].exec({ command: "head -c 25165824 /dev/zero | tr '\\0' B; printf END", maxOutput: 1024 });
    const bytewise = (n: number): string => Array.from({ length: SECRET.length }, (_, i) => `printf %s "\${S:${i}:1}"; printf %s -${n}- >&2`).join('; ');
    const slow = [1, 2, 3].map((n) => gateways[n % 2].exec({ command: `S='<<secret:attack>>'; ${bytewise(n)}; echo` }));
    const [big, ...small] = await Promise.all([burst, ...slow]);
    expect(big.bytes.stdout).toBe(25165824 + 3);
    expect(big.stdout.endsWith('BBBEND')).toBe(true);
    expect(big.stdout.replace(/\n\[\.\.\. execgate cut [^\]]*\]\n/, '')).toMatch(/^B+END$/);
    const file = readFileSync(big.fullOutputPath as string, 'latin1');
    expect(file.indexOf('END')).toBe(25165824);
    expect(/[^B]/.exec(file.slice(0, 25165824))).toBeNull();
    small.forEach((result, index) => {
      expect(result.stdout).toBe(`${MASK.toString()}\n`);
      expect(result.stderr).toBe(`-${index + 1}-`.repeat(SECRET.length));
    });
  }, 90_000);

  test('output after the shell exits: a leftover that writes the value later, and one that keeps the pipe open, reach no result and no other run', async () => {
    const gateway = gateways[0];
    // The leftover is ended with the run (leftovers: kill); its late bytes go nowhere.
    const first = await gateway.exec({ command: "S='<<secret:attack>>'; (sleep 0.5; echo \"LATE-$S\"; echo LATE2 >&2) & echo early" });
    expect(first.stdout).toBe('early\n');
    const next = await gateway.exec({ command: 'sleep 1; echo next' });
    expect(next.output).toBe('next\n');
    // Closes its stdout at once, a child keeps stderr open past the shell's exit.
    const closed = await gateway.exec({ command: 'exec 1>&-; (sleep 0.3; echo child-err >&2) & echo parent-err >&2' });
    expect(closed.stdout).toBe('');
    expect(closed.stderr).toBe('parent-err\n');
    expect(closed.exitCode).toBe(0);
    const after = await gateway.exec({ command: 'sleep 0.6; echo after' });
    expect(after.output).toBe('after\n');
  }, 60_000);
});

/*
 * A node process with a gateway of its own (its own pipe pool), driven by `script`: what a
 * process of the same user does to its batch directory must not reach the tests' own pool.
 */
function node(script: string, args: string[] = []): Promise<{ stdout: string; code: number | null }> {
  return new Promise((resolve) => {
    execFile(process.execPath, ['-e', script, DIST, tmp.dir, ...args], { env: { ...baseEnv() }, timeout: 60_000 }, (error, stdout) => {
      resolve({ stdout, code: error ? (error as { code?: number }).code ?? 1 : 0 });
    });
  });
}

const GATEWAY = `
const fs = require('fs');
const { createGateway } = require(process.argv[1]);
const { DEFAULT_POLICY } = require(process.argv[1] + '/policy/effective');
const tmp = process.argv[2];
const gateway = createGateway({ policy: { ...DEFAULT_POLICY, sandbox: { ...DEFAULT_POLICY.sandbox, mode: 'off' } }, home: tmp + '/home-' + process.pid, env: { PATH: '/usr/bin:/bin', EXECGATE_KEYRING: 'off' }, cwd: tmp, spawner: 'direct', audit: false });
const ns = /[0-9]+/.exec(fs.readlinkSync('/proc/self/ns/pid'))[0];
const dirs = () => fs.readdirSync('/tmp').filter((n) => n.startsWith('execgate-pipes-' + ns + '-' + process.pid + '-')).map((n) => '/tmp/' + n);
`;

describe('the batch directory, from a process of the same user', () => {
  test.each(['file', 'symlink', 'fifo-of-its-own', 'removed'])('names replaced by a %s: runs start on sockets or pipes, write nowhere else, and are what they report', async (how) => {
    const target = join(tmp.dir, 'target.txt');
    writeFileSync(target, 'TARGET-UNCHANGED\n');
    const script = `${GATEWAY}
(async () => {
  const out = [];
  out.push((await gateway.exec({ command: 'echo first' })).stdout);
  for (const dir of dirs()) {
    if (${JSON.stringify(how)} === 'removed') { fs.rmSync(dir, { recursive: true }); continue; }
    for (const name of fs.readdirSync(dir)) {
      const path = dir + '/' + name;
      fs.unlinkSync(path);
      if (${JSON.stringify(how)} === 'file') fs.writeFileSync(path, 'PLANTED\\n');
      if (${JSON.stringify(how)} === 'symlink') fs.symlinkSync(${JSON.stringify(target)}, path);
      if (${JSON.stringify(how)} === 'fifo-of-its-own') require('child_process').execFileSync('mkfifo', [path]);
    }
  }
  for (let i = 0; i < 4; i++) {
    const r = await gateway.exec({ command: 'echo run-' + i + ' > /dev/stdout; echo err-' + i + ' >&2; echo ran-' + i + ' >> ' + ${JSON.stringify(join(tmp.dir, 'ran.txt'))} });
    out.push(r.stdout + '|' + r.stderr + '|' + r.exitCode);
  }
  await gateway.close();
  process.stdout.write(JSON.stringify(out));
})().catch((e) => { process.stdout.write('ERROR ' + e.code + ' ' + e.message); });
`;
    const { stdout } = await node(script);
    expect(stdout.startsWith('ERROR')).toBe(false);
    const out = JSON.parse(stdout) as string[];
    expect(out[0]).toBe('first\n');
    // Every run reported ran, and reported what it printed; sockets refuse /dev/stdout (ENXIO).
    for (let i = 0; i < 4; i++) expect(out[i + 1]).toMatch(new RegExp(`^(run-${i}\\n)?\\|(.*No such device or address\\n)?err-${i}\\n\\|[0-9]+$`));
    expect(readFileSync(join(tmp.dir, 'ran.txt'), 'utf8')).toBe('ran-0\nran-1\nran-2\nran-3\n');
    expect(readFileSync(target, 'utf8')).toBe('TARGET-UNCHANGED\n');
  }, 60_000);

  test('a gateway killed (SIGKILL) mid-run leaves its batch directory; the next gateway process removes it', async () => {
    const script = `${GATEWAY}
gateway.exec({ command: 'sleep 30' });
setTimeout(() => process.stdout.write(JSON.stringify(dirs()) + '\\n'), 1500);
`;
    const child = spawn(process.execPath, ['-e', script, DIST, tmp.dir], { env: baseEnv(), stdio: ['ignore', 'pipe', 'inherit'] });
    const left = await new Promise<string[]>((resolve) => child.stdout.once('data', (data: Buffer) => resolve(JSON.parse(data.toString()) as string[])));
    expect(left.length).toBe(1);
    child.kill('SIGKILL');
    expect(await waitFor(() => !isAlive(child.pid as number), 10_000)).toBe(true);
    expect(existsSync(left[0])).toBe(true);
    const ours = readdirSync('/tmp').filter((name) => name.startsWith(`execgate-pipes-${getPidNamespace()}-${process.pid}-`));
    const { stdout } = await node(`${GATEWAY} gateway.exec({ command: 'echo swept' }).then((r) => gateway.close().then(() => process.stdout.write(r.stdout)));`);
    expect(stdout).toBe('swept\n');
    expect(existsSync(left[0])).toBe(false);
    // Only directories of processes that are gone: a live gateway's (this process's) stays.
    for (const dir of ours) expect(existsSync(join('/tmp', dir))).toBe(true);
  }, 60_000);
});

describeSandboxed('output of concurrent sandboxed runs (cold and warm) against a reference', () => {
  let gateways: Gateway[];
  beforeEach(() => {
    gateways = [0, 1].map((warm) => {
      const gateway = makeGateway({ home: join(tmp.dir, `sandboxed-${warm}`), env: baseEnv(), cwd: tmp.dir, spawner: 'direct', warmSandboxes: warm });
      gateway.refs.set('secret', 'attack', SECRET);
      return gateway;
    });
  });
  afterEach(async () => { await Promise.all(gateways.map((gateway) => gateway.close())); });

  test('binary output, a value split across reads and pieces: each run exactly its own bytes', async () => {
    const dir = join(tmp.dir, 'pieces');
    mkdirSync(dir);
    await fc.assert(fc.asyncProperty(fc.array(planArb, { minLength: 2, maxLength: 3 }), (plans) => runPlans(gateways, plans, dir)), { numRuns: RUNS || 3 });
  }, 120_000);

  test('a run writing at once after the gate\'s `go` keeps stdout and stderr each in order (64 KiB bursts, then lines)', async () => {
    // Bytes read before the run's reader claims the pipe, and after: none reordered, none lost.
    const cmd = "head -c 200000 /dev/zero | tr '\\0' a; for i in $(seq 1 300); do echo o$i; echo e$i >&2; done";
    for (let round = 0; round < 3; round++) {
      const results = await Promise.all(gateways.map((gateway) => gateway.exec({ command: cmd, maxOutput: 1_048_576 })));
      for (const result of results) {
        expect(result.stdout).toBe(`${'a'.repeat(200000)}${Array.from({ length: 300 }, (_, i) => `o${i + 1}\n`).join('')}`);
        expect(result.stderr).toBe(Array.from({ length: 300 }, (_, i) => `e${i + 1}\n`).join(''));
      }
    }
  }, 120_000);

  test('a sandboxed run cannot read another run\'s pipe: every FIFO it can name, opened for reading', async () => {
    const victim = gateways[0].exec({ command: "S='<<secret:attack>>'; for i in $(seq 1 40); do echo \"victim-$i\"; sleep 0.05; done" });
    const attack = 'n=0; for f in /proc/[0-9]*/fd/* /dev/stdout /dev/stderr; do if [ -p "$f" ]; then n=$((n+1)); timeout 1 cat "$f" > /tmp/got-$n 2>/dev/null & fi; done; wait; cat /tmp/got-* 2>/dev/null | grep -c victim; echo tried $n; ls /tmp';
    const attacker = await gateways[1].exec({ command: attack, timeout: 20_000 });
    expect(attacker.sandbox.sandboxed).toBe(true);
    expect(attacker.stdout).toMatch(/^0\ntried [1-9]/);
    expect(attacker.stdout).not.toContain('execgate-pipes');
    const result = await victim;
    expect(result.stdout.split('\n').filter(Boolean)).toEqual(Array.from({ length: 40 }, (_, i) => `victim-${i + 1}`));
  }, 60_000);
});
