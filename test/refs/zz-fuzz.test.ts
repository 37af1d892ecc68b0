import { spawnSync } from 'node:child_process';
import { existsSync, rmSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { substituteTokens } from '../../src/refs/substitute';
import { scanTokens } from '../../src/refs/tokens';
import { isExecgateError } from '../../src/errors';

const dir = mkdtempSync('/tmp/fz-');
const PW = join(dir, 'pw');
const T = '<<secret:t>>';
const FR = ['echo ', "printf '[%s]' ", '"', "'", '$(', ')', '`', '${x:-', '${x#', '}', '<<EOF\n', '\nEOF\n', "<<'EOF'\n", '<<-EOF\n\t', '\\', '$', '#', ' ', '\n', ';', '|', 'case a in a) ', ';; esac', '((', '))', '$((', '[[ ', ' ]]', ' -eq ', ' == ', 'a[', ']', "$'", '$"', '{', '}', '(', '<(', '<<<', T, T, T, T, 'x', '\\\n', 'cat ', '&&', '"$(', ')"', '`echo ', '\\`', '\\"', 'EOF', '\t', 'in ', 'esac', '$[', '${#', '${x:', '{{secret:t}}'];
function run(script: string, env: Record<string,string>) {
  const c = spawnSync('bash', ['-c', script], { env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', ...env }, encoding: 'utf8', timeout: 3000, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  return { out: c.stdout, status: c.status };
}
test('fuzz', () => {
  let ran = 0, refused = 0, mism = 0;
  const bad: string[] = [];
  fc.assert(fc.property(fc.array(fc.constantFrom(...FR), { minLength: 1, maxLength: 14 }), (parts) => {
    const command = parts.join('');
    const toks = scanTokens(command).filter(t => t.raw === T);
    if (toks.length === 0) return;
    let script: string;
    try { script = substituteTokens(command, toks.map(token => ({ token, envName: 'N' }))); }
    catch (e) { if (isExecgateError(e) && e.code === 'EXECGATE_ERR_REF_UNSAFE_CONTEXT') { refused++; return; } throw e; }
    ran++;
    const evil = `a[$(touch ${PW})]\`touch ${PW}\`'"$(touch ${PW})`;
    run(script, { N: evil });
    if (existsSync(PW)) { rmSync(PW); bad.push('INJECT ' + JSON.stringify(command) + ' => ' + JSON.stringify(script)); }
    if (/<<secret:t>>(=|\+=|\(|\[)/.test(command)) return;
    const a = run(script, { N: 'Vq9' });
    const b = run(command.split(T).join('Vq9'), {});
    if (a.out !== b.out || a.status !== b.status) { mism++; if (bad.length < 40) bad.push('DIFF ' + JSON.stringify(command) + ' => ' + JSON.stringify(script) + ` ${JSON.stringify(a)} vs ${JSON.stringify(b)}`); }
  }), { numRuns: Number(process.env.FUZZ_RUNS ?? 3000), seed: Number(process.env.FUZZ_SEED ?? 1) });
  console.log({ ran, refused, mism }, bad.join('\n'));
});
