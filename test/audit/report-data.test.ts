/*
 * The report's aggregates without a browser: timeline buckets that fit the period (a few seconds
 * to years, never more than MAX_BARS bars, every run counted once), the bounded set of embedded
 * runs at scale, and rotations seen as fingerprint changes.
 */
import fc from 'fast-check';
import { ReportCollector } from '../../src/audit/report-data';
import { BUCKETS, MAX_BARS } from '../../src/audit/report-timeline';
import { RunAssembler, type RunSummary } from '../../src/audit/runs';

function runsOver(times: number[], decide: (index: number) => 'ok' | 'denied' | 'fail' = () => 'ok'): RunSummary[] {
  const out: RunSummary[] = [];
  const assembler = new RunAssembler((summary) => out.push(summary));
  let seq = 0;
  const base = { v: 1, prev: '0', hash: '0' };
  times.forEach((time, index) => {
    const runId = `run_${index}`;
    const at = new Date(time).toISOString();
    const kind = decide(index);
    assembler.pushRecord({ ...base, seq: ++seq, time: at, event: 'exec.request', runId, actor: `a${index % 3}`, command: `cmd ${index}` });
    if (kind === 'denied') {
      assembler.pushRecord({ ...base, seq: ++seq, time: at, event: 'exec.denied', runId, rule: 'r', refs: [{ kind: 'secret', id: 'x', ref: '<<secret:x>>' }] });
      return;
    }
    assembler.pushRecord({ ...base, seq: ++seq, time: at, event: 'exec.started', runId, refs: [{ kind: 'secret', id: 'x', ref: '<<secret:x>>', found: true, source: 'env', fingerprint: `hmac-sha256:${index < times.length / 2 ? 'a' : 'b'}` }] });
    assembler.pushRecord({ ...base, seq: ++seq, time: at, event: 'exec.finished', runId, exitCode: kind === 'fail' ? 1 : 0, signal: null, timedOut: false, durationMs: 5 });
  });
  assembler.finish();
  return out;
}

test.each([
  ['a few seconds', 8_000, 'second'],
  ['two minutes', 120_000, '5 seconds'],
  ['two hours', 2 * 3_600_000, '5 minutes'],
  ['three days', 3 * 86_400_000, 'hour'],
  ['three months', 90 * 86_400_000, 'day'],
  ['three years', 3 * 365 * 86_400_000, '30 days'],
])('a period of %s (%d ms) gets bars of one %s', (_name, span, expected) => {
  const start = Date.UTC(2025, 0, 5, 10, 0, 0);
  const times = Array.from({ length: 400 }, (_, index) => start + Math.round((span * index) / 399));
  const collector = new ReportCollector(1000);
  for (const run of runsOver(times, (index) => (index % 5 === 0 ? 'denied' : index % 7 === 0 ? 'fail' : 'ok'))) collector.add(run);
  const { timeline, outcomes } = collector.result();
  expect(timeline!.label).toBe(expected);
  expect(timeline!.bars.length).toBeLessThanOrEqual(MAX_BARS);
  expect(timeline!.bars.length).toBeGreaterThan(MAX_BARS / 20);
  const sums = timeline!.bars.reduce((acc, bar) => [acc[0] + bar[0], acc[1] + bar[1], acc[2] + bar[2]], [0, 0, 0]);
  expect(sums).toEqual(outcomes);
  expect(outcomes[1]).toBe(80);
});

test('any set of times: at most MAX_BARS bars, each run counted once, the finest bucket that fits', () => {
  fc.assert(
    fc.property(fc.array(fc.integer({ min: 1_600_000_000_000, max: 1_900_000_000_000 }), { minLength: 1, maxLength: 60 }), (times) => {
      const collector = new ReportCollector(100);
      for (const run of runsOver(times)) collector.add(run);
      const { timeline } = collector.result();
      const total = timeline!.bars.reduce((sum, bar) => sum + bar[0] + bar[1] + bar[2], 0);
      expect(total).toBe(times.length);
      expect(timeline!.bars.length).toBeLessThanOrEqual(MAX_BARS);
      const span = Math.max(...times) - Math.min(...times);
      const finer = BUCKETS[BUCKETS.findIndex((bucket) => bucket.ms === timeline!.bucketMs) - 1];
      if (finer !== undefined) expect(span / finer.ms + 1).toBeGreaterThan(MAX_BARS);
    }),
    { numRuns: 200 },
  );
});

test('past the limit, the page embeds a bounded set: the latest, the latest denied or failed, and a sample; aggregates stay exact', () => {
  const start = Date.UTC(2025, 0, 5);
  const times = Array.from({ length: 20_000 }, (_, index) => start + index * 1000);
  const collector = new ReportCollector(1000);
  for (const run of runsOver(times, (index) => (index % 50 === 0 ? 'denied' : 'ok'))) collector.add(run);
  const model = collector.result();
  expect(model.sampled).toBe(true);
  expect(model.totalRuns).toBe(20_000);
  expect(model.runs.length).toBeLessThanOrEqual(1000);
  const ids = new Set(model.runs.map((run) => run.i));
  expect(ids.has('run_19999')).toBe(true);
  expect(ids.has('run_19950')).toBe(true);
  // The latest 400 denials (every 50th run) are all there, though most are far older than the latest 400 runs.
  for (let index = 0; index < 20_000; index += 50) expect([index, ids.has(`run_${index}`)]).toEqual([index, true]);
  expect(model.outcomes).toEqual([19_600, 400, 0]);
  const secret = model.secrets.find((use) => use.ref === '<<secret:x>>')!;
  expect(secret).toMatchObject({ runs: 20_000, denied: 400, allowed: 19_600, fingerprints: 2 });
  expect(secret.rotations).toEqual([expect.objectContaining({ from: 'hmac-sha256:a', to: 'hmac-sha256:b', runId: 'run_10001' })]);
});
