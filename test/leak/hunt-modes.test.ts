/*
 * The leak hunt byte by byte, in PTY and background modes, and through run_bash tool results
 * (see hunt-shared.ts for the values and the printing methods).
 */
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { createDefaultToolRegistry } from '../../src/tools';
import { expectNoLeak } from '../helpers/leak';
import { HUNT_COMMAND, isDistinct, useHunt, values } from './hunt-shared';

const hunt = useHunt();

describe('leak hunt, other modes', () => {
  test('byte by byte with delays, on both streams', async () => {
    await fc.assert(
      fc.asyncProperty(values, async (value) => {
        fc.pre(isDistinct(value) && value.length <= 40);
        hunt.seen.push(value);
        hunt.gateway.refs.set('secret', 'hunt', value);
        const command = 'V=<<secret:hunt>>; for ((i=0; i<${#V}; i++)); do printf %s "${V:i:1}"; printf %s "${V:i:1}" >&2; sleep 0.001; done';
        const result = await hunt.gateway.exec({ command });
        expectNoLeak(result, [value]);
        expect(result.stdout).toBe('[REDACTED:secret:hunt]');
      }),
      { numRuns: 25 },
    );
  }, 400_000);

  test('pty mode: the terminal stream (\\r\\n line endings) is masked', async () => {
    await fc.assert(
      fc.asyncProperty(values, async (value) => {
        fc.pre(isDistinct(value));
        hunt.seen.push(value);
        hunt.gateway.refs.set('secret', 'hunt', value);
        const result = await hunt.gateway.exec({ command: 'V=<<secret:hunt>>; printf "%s\\n" "$V"; printf %s "$V" | base64 -w0; echo; printf "x%sy\\n" "$V"', mode: 'pty' });
        expectNoLeak(result, [value]);
      }),
      { numRuns: 25 },
    );
  }, 400_000);

  test('background mode: output files and status reads are masked', async () => {
    await fc.assert(
      fc.asyncProperty(values, async (value) => {
        fc.pre(isDistinct(value));
        hunt.seen.push(value);
        hunt.gateway.refs.set('secret', 'hunt', value);
        const started = await hunt.gateway.exec({ command: HUNT_COMMAND, mode: 'background' });
        expectNoLeak(started, [value]);
        await hunt.gateway.background.wait(started.id, 20_000);
        expectNoLeak(readFileSync(started.outputPath), [value]);
        expectNoLeak(hunt.gateway.background.status(started.id, { offset: 0, length: 1024 * 1024 }), [value]);
        expectNoLeak(hunt.gateway.background.status(started.id), [value]);
        expectNoLeak(hunt.gateway.background.list(), [value]);
        hunt.gateway.background.remove(started.id);
      }),
      { numRuns: 15 },
    );
  }, 400_000);

  test('tool results: run_bash JSON strings are masked', async () => {
    const registry = createDefaultToolRegistry({ gateway: hunt.gateway, workdir: hunt.dir });
    registry.enableTool('run_bash');
    await fc.assert(
      fc.asyncProperty(values, async (value) => {
        fc.pre(isDistinct(value));
        hunt.seen.push(value);
        hunt.gateway.refs.set('secret', 'hunt', value);
        const text = await registry.execute('run_bash', { command: HUNT_COMMAND });
        expect(JSON.parse(text).exit_code).toBe(0);
        expectNoLeak(text, [value]);
      }),
      { numRuns: 15 },
    );
  }, 400_000);
});
