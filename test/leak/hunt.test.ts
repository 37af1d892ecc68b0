/*
 * The leak hunt in sync mode (see hunt-shared.ts for the values and the printing methods), and
 * HTML/XML escapes by real python3.
 */
import fc from 'fast-check';
import { expectNoLeak } from '../helpers/leak';
import { HUNT_COMMAND, HUNT_RUNS, isDistinct, PRINTERS, useHunt, values } from './hunt-shared';

const hunt = useHunt();

describe('leak hunt', () => {
  test(`sync mode: ${HUNT_RUNS} values x ${PRINTERS.length + 3} printing methods, no leak on any result surface`, async () => {
    await fc.assert(
      fc.asyncProperty(values, async (value) => {
        fc.pre(isDistinct(value));
        hunt.seen.push(value);
        hunt.gateway.refs.set('secret', 'hunt', value);
        const result = await hunt.gateway.exec({ command: HUNT_COMMAND });
        expect(result.exitCode).toBe(0);
        expectNoLeak(result, [value]);
        // Every printer fired: each put at least one marker (hex and base64 forms included).
        expect(result.redactions).toBeGreaterThanOrEqual(PRINTERS.length);
      }),
      { numRuns: HUNT_RUNS },
    );
    // A hang guard, not a speed check: 200 sandboxed runs took 400 s beside a CPU hog at load 17.
  }, 900_000);

  test('HTML/XML escaping by real python3 (html.escape both ways, xml.sax.saxutils.escape) is masked whole', async () => {
    const command = 'V=<<secret:html>> python3 -c "import html,os; from xml.sax.saxutils import escape; v=os.environ[\'V\']; print(html.escape(v)); print(html.escape(v, quote=False)); print(escape(v, {chr(39): \'&apos;\', chr(34): \'&quot;\'}))"';
    for (const value of ["it's-a-s3cret-value", 'p"w<d>&\'x\'-long', '"only-double-quotes"']) {
      hunt.seen.push(value);
      hunt.gateway.refs.set('secret', 'html', value);
      const result = await hunt.gateway.exec({ command });
      expect(result.exitCode).toBe(0);
      expect(result.stdout).toBe('[REDACTED:secret:html]\n'.repeat(3));
    }
  });
});
