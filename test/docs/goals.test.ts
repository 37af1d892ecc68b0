/*
 * The performance goals live in one list (bench/goals.js): the benchmark prints it with each run's
 * figures, and docs/performance.md shows the same table. Here: the document's table matches the
 * list, a changed goal in the document is caught, and a run's rows are read against the goals
 * (a row that names a goal, a figure's row found by name, a goal no row measures).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

interface Goal {
  id: string;
  figure: number;
  target: number;
  direction: '<=' | '>=';
  unit: string;
}
interface Result {
  id: string;
  value?: number;
  peer?: number;
  met?: boolean;
  row?: string;
}
interface Row {
  figure: number;
  name: string;
  unit: string;
  median: number;
  goal?: string;
  ratio?: { of: string; value: number; target?: string; met?: boolean };
}
interface GoalsModule {
  GOALS: Goal[];
  checkGoalsDoc(text: string): string[];
  evaluateGoals(rows: Row[]): Result[];
  formatGoalsMarkdown(): string;
}
interface LibModule {
  row(figure: number, name: string, samples: number[], options?: { unit?: string; of?: { name: string; samples: number[] }; goal?: string; peerOf?: string }): Row;
}

const ROOT = join(__dirname, '..', '..');
const goals = require(join(ROOT, 'bench', 'goals.js')) as GoalsModule;
const lib = require(join(ROOT, 'bench', 'lib.js')) as LibModule;
const doc = readFileSync(join(ROOT, 'docs', 'performance.md'), 'utf8');

describe('the goals table', () => {
  it('docs/performance.md shows the goals of bench/goals.js', () => {
    expect(goals.checkGoalsDoc(doc)).toEqual([]);
    for (const goal of goals.GOALS) expect(doc).toContain(`| ${goal.id} `);
  });

  it('a goal changed in the document alone is reported', () => {
    const first = goals.GOALS[0];
    const changed = doc.replace(/(<!-- goals:begin -->[\s\S]*?\| ≤ )2x/, '$13x');
    expect(changed).not.toBe(doc);
    const problems = goals.checkGoalsDoc(changed);
    expect(problems).toHaveLength(1);
    expect(problems[0]).toContain(first.id);
    expect(goals.checkGoalsDoc(doc.replace('<!-- goals:end -->', ''))).toEqual([expect.stringContaining('no goals table')]);
  });

  it('ids are unique and every goal has a target and a direction', () => {
    const ids = goals.GOALS.map((goal) => goal.id);
    expect(new Set(ids).size).toBe(ids.length);
    for (const goal of goals.GOALS) {
      expect(['<=', '>=']).toContain(goal.direction);
      expect(Number.isFinite(goal.target)).toBe(true);
    }
  });

  it('reads a run against the goals: a row naming a goal, a figure row found by name, a goal not measured', () => {
    const base = { name: 'node -e 0', samples: [10, 10, 10] };
    const rows = [
      lib.row(6, 'node -e 0', base.samples),
      lib.row(6, 'execgate run -- true (node dist/cli/main.js)', [25, 30, 35], { of: base }),
      lib.row(14, 'proxy CPU per MiB', [3, 3, 3], { unit: 'ms/MiB', of: { name: 'peer', samples: [4, 4, 4] }, goal: 'proxy-cpu-vs-peer' }),
      lib.row(14, 'srt -c true', [70, 80, 90], { of: base, peerOf: 'cli-start' }),
    ];
    // The goal's target comes from the goals list, not from the figure.
    expect(rows[2].ratio).toEqual({ of: 'peer', value: 0.75, target: '<= 1', met: true });
    const results = new Map(goals.evaluateGoals(rows).map((result) => [result.id, result]));
    // The peer's row is shown beside the goal, never taken for this tree's figure.
    expect(results.get('cli-start')).toMatchObject({ value: 3, met: false, row: 'execgate run -- true (node dist/cli/main.js)', peer: 8 });
    expect(results.get('proxy-cpu-vs-peer')).toMatchObject({ value: 0.75, met: true });
    expect(results.get('mcp-call')).toMatchObject({ value: undefined, met: undefined, peer: undefined });
    expect(() => lib.row(1, 'x', [1], { goal: 'no-such-goal' })).toThrow(/no goal 'no-such-goal'/);
  });
});
