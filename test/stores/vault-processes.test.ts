/*
 * Real processes against one vault: writers killed with SIGKILL at random moments, and
 * writers racing each other. Every entry a writer reported as committed must survive.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Vault } from '../../src/stores';
import { makeTempDir } from '../helpers/tmp';
import { childEnv, runChild } from './fixtures/run-child';

jest.setTimeout(120_000);

let temp: { dir: string; cleanup: () => void };
let home: string;

beforeEach(() => {
  temp = makeTempDir('execgate-vault-proc-');
  home = join(temp.dir, 'home');
});
afterEach(() => temp.cleanup());

/** Child code: add `count` secrets `${prefix}-${i}`, reporting each once committed. */
function writerCode(prefix: string, count: number, padding = 0): string {
  return `
    const { Vault } = src('stores');
    const vault = new Vault({ home: ${JSON.stringify(home)}, keyring: false, lockTimeoutMs: 20000 });
    emit({ ready: true });
    for (let i = 0; i < ${count}; i += 1) {
      const name = ${JSON.stringify(prefix)} + '-' + i;
      await vault.set(name, 'value-of-' + name + '-' + 'x'.repeat(${padding}));
      emit({ committed: name });
    }
    return 'done';
  `;
}

function expectedValue(name: string, padding = 0): string {
  return `value-of-${name}-${'x'.repeat(padding)}`;
}

test('a writer killed with SIGKILL mid-write never costs a committed entry', async () => {
  const committed: string[] = [];
  const rounds = 6;
  let staleLocks = 0;
  for (let round = 0; round < rounds; round += 1) {
    // Kill after a random number of commits plus a random delay, so the kill lands anywhere
    // in the lock/read/encrypt/write/rename/unlock cycle.
    const killAfter = 1 + Math.floor(Math.random() * 6);
    const run = await runChild(writerCode(`round${round}`, 1000, 4000), {
      env: childEnv(),
      timeoutMs: 30_000,
      onLine(line, child) {
        if (typeof line.committed === 'string') {
          committed.push(line.committed);
          if (committed.filter((name) => name.startsWith(`round${round}-`)).length === killAfter) {
            setTimeout(() => child.kill('SIGKILL'), Math.random() * 8);
          }
        }
      },
    });
    expect(run.signal).toBe('SIGKILL');
    if (readdirSync(home).includes('vault.json.lock')) staleLocks += 1;
  }
  // Nearly every kill lands while the writer holds the lock (it holds it almost all the time),
  // so the later rounds had to break a dead writer's lock.
  expect(staleLocks).toBeGreaterThan(0);
  const vault = new Vault({ home, env: {}, keyring: false });
  const names = new Set((await vault.list()).map((entry) => entry.name));
  for (const name of committed) {
    expect(names.has(name)).toBe(true);
    expect(await vault.get('secret', name)).toBe(expectedValue(name, 4000));
  }
  expect(await vault.verify()).toMatchObject({ exists: true });
  // A later writer breaks the dead writer's lock and cleans its temporary files.
  await vault.set('after-the-crashes', 'still-writable-value');
  expect(readdirSync(home).sort()).toEqual(['vault.json', 'vault.key']);
});

test('4 processes adding 25 entries each at once: all 100 present', async () => {
  const runs = await Promise.all(
    [0, 1, 2, 3].map((writer) => runChild(writerCode(`writer${writer}`, 25), { env: childEnv(), timeoutMs: 50_000 })),
  );
  for (const run of runs) {
    expect(run.stderr).toBe('');
    expect(run.lines.at(-1)).toEqual({ result: 'done' });
  }
  const vault = new Vault({ home, env: {}, keyring: false });
  const entries = await vault.list();
  expect(entries).toHaveLength(100);
  for (let writer = 0; writer < 4; writer += 1) {
    for (let index = 0; index < 25; index += 1) {
      const name = `writer${writer}-${index}`;
      expect(await vault.get('secret', name)).toBe(expectedValue(name));
    }
  }
  // All four agreed on one key (the first writer created it under the lock).
  expect(readdirSync(home).sort()).toEqual(['vault.json', 'vault.key']);
});

test('readers keep working while another process rotates the key', async () => {
  const vault = new Vault({ home, env: {}, keyring: false });
  await vault.set('steady', 'steady-value-123');
  let done = false;
  const rotation = runChild(
    `
    const { Vault } = src('stores');
    const vault = new Vault({ home: ${JSON.stringify(home)}, keyring: false });
    for (let i = 0; i < 20; i += 1) await vault.rotateKey();
    return 'rotated';
    `,
    { env: childEnv(), timeoutMs: 30_000 },
  ).finally(() => {
    done = true;
  });
  let reads = 0;
  try {
    while (!done) {
      expect(await new Vault({ home, env: {}, keyring: false }).get('secret', 'steady')).toBe('steady-value-123');
      reads += 1;
    }
  } finally {
    await rotation;
  }
  const run = await rotation;
  expect(run.lines.at(-1)).toEqual({ result: 'rotated' });
  expect(reads).toBeGreaterThan(0);
  expect(await vault.get('secret', 'steady')).toBe('steady-value-123');
});

/*
 * The rotation race, under stress: 40 rotations in another process while 6 readers each open a
 * fresh Vault and read in a loop. A reader that read vault.json just before a rotation and the
 * key just after must still get the value, never VAULT_WRONG_KEY. Every read is checked; the
 * loop ends when the rotating process says it is done (an ordering, not a duration).
 */
test('rotation stress: 40 rotations x 6 concurrent readers, no read fails', async () => {
  const vault = new Vault({ home, env: {}, keyring: false });
  await vault.set('stress', 'stress-value-0123456789');
  let done = false;
  const rotation = runChild(
    `
    const { Vault } = src('stores');
    const vault = new Vault({ home: ${JSON.stringify(home)}, keyring: false });
    for (let i = 0; i < 40; i += 1) await vault.rotateKey();
    return 'rotated';
    `,
    { env: childEnv(), timeoutMs: 120_000 },
  ).finally(() => {
    done = true;
  });
  const failures: string[] = [];
  let reads = 0;
  const reader = async (): Promise<void> => {
    while (!done) {
      try {
        const value = await new Vault({ home, env: {}, keyring: false }).get('secret', 'stress');
        if (value !== 'stress-value-0123456789') failures.push(`wrong value ${String(value)}`);
      } catch (error) {
        failures.push((error as { code?: string }).code ?? String(error));
      }
      reads += 1;
    }
  };
  await Promise.all([...Array.from({ length: 6 }, reader), rotation]);
  expect((await rotation).lines.at(-1)).toEqual({ result: 'rotated' });
  expect(failures).toEqual([]);
  expect(reads).toBeGreaterThan(0);
}, 180_000);
