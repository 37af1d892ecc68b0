import { mkdtempSync, writeFileSync, mkdirSync } from 'node:fs';
import { join, dirname } from 'node:path';
import { tmpdir } from 'node:os';
import { BROKEN_CASES } from './broken-cases';
import { checkPolicyFile } from '../../src/policy/load';
import { formatProblem } from '../../src/policy/problems';
test('print', () => {
  const out: string[] = [];
  for (const c of BROKEN_CASES) {
    const dir = mkdtempSync(join(tmpdir(), 'bc-'));
    for (const [n, t] of Object.entries(c.files)) { mkdirSync(dirname(join(dir, n)), { recursive: true }); writeFileSync(join(dir, n), t); }
    const r = checkPolicyFile(c.main, { cwd: dir });
    out.push(`${c.name}\n  ${r.ok ? 'OK!!' : r.problems.map((p) => `${p.code} ${formatProblem(p)}`).join('\n  ')}`);
  }
  console.log(out.join('\n'));
});
