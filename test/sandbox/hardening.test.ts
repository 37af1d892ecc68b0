/*
 * Escapes an adversarial review found after the sandbox landed, each tried through a real
 * gateway with real bubblewrap and real bash. Several only mean something when the gateway
 * runs as root (as CI does): the kernel lets uid 0 write sysctls without any capability.
 */
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { baseEnv, makeTempDir } from '../helpers/tmp';
import { describeSandboxed, makeGateway, MODES, runIn, type Mode } from './helpers';

jest.setTimeout(60_000);

let tmp: ReturnType<typeof makeTempDir>;
let work: string;

beforeEach(() => {
  tmp = makeTempDir('execgate-hard-');
  work = join(tmp.dir, 'work');
  mkdirSync(work);
});
afterEach(() => rmSync(tmp.dir, { recursive: true, force: true, maxRetries: 20, retryDelay: 50 }));

describeSandboxed('hardening', () => {
  describe.each(MODES)('%s mode', (mode: Mode) => {
    test('kernel knobs under /proc are read-only and kernel state is masked (core_pattern escape)', async () => {
      const before = readFileSync('/proc/sys/kernel/core_pattern', 'utf8');
      const gateway = makeGateway({ home: join(tmp.dir, 'state'), env: baseEnv(), cwd: work });
      try {
        // Harmless probes: `test -w`, and writing the current value back (a no-op if it lands).
        const run = await runIn(gateway, mode, [
          'test -w /proc/sys/kernel/core_pattern && echo CORE-PATTERN-WRITABLE',
          '(cat /proc/sys/kernel/core_pattern > /proc/sys/kernel/core_pattern) 2>/dev/null && echo CORE-PATTERN-WRITTEN',
          'test -w /proc/sys/vm/drop_caches && echo SYSCTL-WRITABLE',
          'test -w /proc/sysrq-trigger && echo SYSRQ-WRITABLE',
          'test -e /proc/keys && test -s /proc/keys && echo KEYS-READABLE',
          'test -w /sys/kernel && echo SYS-WRITABLE',
          'test -w /sys/fs/cgroup && echo CGROUP-WRITABLE',
          'cat /proc/sys/kernel/ostype',
        ].join('; '));
        expect(run.sandboxed).toBe(true);
        // /proc/sys is still readable: tools that read sysctls keep working.
        expect(run.output).toContain('Linux');
        for (const leak of ['CORE-PATTERN-WRITABLE', 'CORE-PATTERN-WRITTEN', 'SYSCTL-WRITABLE', 'SYSRQ-WRITABLE', 'KEYS-READABLE', 'SYS-WRITABLE', 'CGROUP-WRITABLE']) {
          expect(run.output).not.toContain(leak);
        }
      } finally {
        await gateway.close();
      }
      expect(readFileSync('/proc/sys/kernel/core_pattern', 'utf8')).toBe(before);
    });
  });
});
