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
const bq = (c: string, dq: boolean) => '`' + c.replace(/[\\`$]/g, (m) => '\\' + m).replace(/"/g, dq ? '\\"' : '"') + '`';
const { cmd } = fc.letrec<{ cmd: string; word: string; dq: string; sq: string; hd: string; part: string }>((tie) => ({
  sq: fc.array(fc.constantFrom('a', ' ', T, '"', '$x', '\\', '`', '#', '$(', '}'), { maxLength: 4 }).map((p) => p.join('')),
  dq: fc.array(fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('a', ' ', T, T, "'", '\\$', '\\"', '\\\\', '#', '}', ')', '(', '$x', '${x}') },
    { weight: 1, arbitrary: tie('cmd').map((c) => `$(${c})`) },
    { weight: 1, arbitrary: tie('cmd').map((c) => bq(c, true)) },
    { weight: 1, arbitrary: tie('dq').map((d) => `\${x:-${d}}`) },
    { weight: 1, arbitrary: tie('dq').map((d) => `\${x:-"${d}"}`) },
  ), { maxLength: 4 }).map((p) => p.join('')),
  hd: fc.array(fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom('a', ' ', T, T, "'", '"', '\\$', '\\\\', '#', '\n', '\t', ')', '(', '$x') },
    { weight: 1, arbitrary: tie('cmd').map((c) => `$(${c})`) },
    { weight: 1, arbitrary: tie('cmd').map((c) => bq(c, false)) },
  ), { maxLength: 5 }).map((p) => p.join('')),
  part: fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(T, T, 'a', '-', '=', '\\"', "\\'", '\\ ', '~', '*', '{b,c}', '@') },
    { weight: 2, arbitrary: tie('dq').map((d) => `"${d}"`) },
    { weight: 2, arbitrary: tie('sq').map((s) => `'${s}'`) },
    { weight: 1, arbitrary: tie('cmd').map((c) => `$(${c})`) },
    { weight: 1, arbitrary: tie('cmd').map((c) => bq(c, false)) },
    { weight: 1, arbitrary: tie('word').map((w) => `\${x:-${w}}`) },
    { weight: 1, arbitrary: tie('word').map((w) => `\${x#${w}}`) },
  ),
  word: fc.array(tie('part'), { minLength: 1, maxLength: 3 }).map((p) => p.join('')),
  cmd: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    { weight: 5, arbitrary: fc.array(tie('word'), { minLength: 1, maxLength: 3 }).map((w) => `printf '[%s]' ${w.join(' ')}`) },
    { weight: 1, arbitrary: fc.tuple(tie('word'), tie('word'), tie('cmd')).map(([a, p, c]) => `case ${a} in ${p}) ${c};; *) echo no;; esac`) },
    { weight: 1, arbitrary: fc.tuple(tie('hd'), fc.constantFrom('<<EOF', '<< EOF', '<<-EOF', "<<'EOF'", '<<"EOF"', '<<\\EOF')).map(([h, op]) => `cat ${op}\n${h}\nEOF\n`) },
    { weight: 1, arbitrary: tie('cmd').map((c) => `( ${c} )`) },
    { weight: 1, arbitrary: fc.tuple(tie('cmd'), tie('cmd')).map(([a, b]) => `${a}; ${b}`) },
    { weight: 1, arbitrary: fc.tuple(tie('cmd'), tie('cmd')).map(([a, b]) => `${a}\n${b}`) },
    { weight: 1, arbitrary: tie('cmd').map((c) => `${c} | cat`) },
    { weight: 1, arbitrary: fc.tuple(tie('cmd'), tie('word')).map(([c, w]) => `${c} # ${w}\n`) },
    { weight: 1, arbitrary: fc.tuple(tie('word'), tie('word')).map(([a, b]) => `[[ ${a} == ${b} ]] && echo y`) },
    { weight: 1, arbitrary: fc.tuple(tie('word'), tie('word')).map(([a, b]) => `[ ${a} = ${b} ] && echo y`) },
    { weight: 1, arbitrary: tie('word').map((w) => `echo $(( 1 + 2 )) ${w}`) },
    { weight: 1, arbitrary: tie('word').map((w) => `x=${w}; printf '<%s>' "$x"`) },
    { weight: 1, arbitrary: tie('cmd').map((c) => `cat <(${c})`) },
    { weight: 1, arbitrary: tie('word').map((w) => `cat <<<${w}`) },
    { weight: 1, arbitrary: tie('word').map((w) => `for i in ${w}; do printf '{%s}' "$i"; done`) },
    { weight: 1, arbitrary: tie('cmd').map((c) => `f() { ${c}; }; f`) },
    { weight: 1, arbitrary: tie('cmd').map((c) => `function g { ${c}; }; g`) },
    { weight: 2, arbitrary: fc.tuple(fc.constantFrom('echo $(( W ))', '(( y = W )); echo $y', 'a[W]=1; echo ${a[@]}', 'echo ${a[W]}', 'x=abcdef; echo ${x:W}', 'x=abc; echo ${x:1:W}', '[[ W -eq 1 ]] && echo y', '[[ 1 -lt W ]]; echo $?', 'echo $[ W ]', 'arr=([W]=1); echo ${arr[@]}', 'echo "$(( 1 + W ))"', 'for (( i=0; i<W; i++ )); do echo $i; done', 'x=abc; echo "${x:W:1}"', 'unset a[W]', 'echo $(( $(echo W) ))', 'echo $(( `echo W` ))', 'declare a[W]=1'), tie('word')).map(([t, w]) => t.replace(/W/g, w)) },
    { weight: 1, arbitrary: fc.tuple(tie('hd'), fc.constantFrom('\t', '\t\t', '')).map(([h, tab]) => `cat <<-EOF\n${tab}${h.replace(/\n/g, '\n' + tab)}\n${tab}EOF\n`) },
    { weight: 1, arbitrary: fc.tuple(tie('hd')).map(([h]) => `printf '[%s]' "$(cat <<EOF\n${h}\nEOF\n)"`) },
    { weight: 1, arbitrary: fc.tuple(tie('word'), tie('word')).map(([a, b]) => `printf '[%s]' ${a}\\\n${b}`) },
    { weight: 1, arbitrary: tie('sq').map((q) => `printf '[%s]' $'${q.replace(/'/g, "\\'")}'`) },
    { weight: 1, arbitrary: tie('word').map((w) => `x=aXb; printf '[%s]' "\${x/X/${w}}" \${x//X/${w}} "\${x%${w}}" \${#x}`) },
  ),
}));
function run(script: string, env: Record<string,string>) {
  const c = spawnSync('bash', ['-c', script], { env: { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', ...env }, encoding: 'utf8', timeout: 3000, cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
  return { out: c.stdout, status: c.status, err: c.stderr.slice(0, 200) };
}
test('fuzz2', () => {
  let ran = 0, refused = 0, mism = 0, noTok = 0;
  const bad: string[] = [];
  const reasons = new Map<string, number>();
  fc.assert(fc.property(cmd, (command) => {
    const toks = scanTokens(command).filter(t => t.raw === T);
    if (toks.length === 0) { noTok++; return; }
    let script: string;
    try { script = substituteTokens(command, toks.map(token => ({ token, envName: 'N' }))); }
    catch (e) { if (isExecgateError(e) && e.code === 'EXECGATE_ERR_REF_UNSAFE_CONTEXT') { refused++; const k = String(e.details.context) + ':' + String(e.details.reason ?? ''); reasons.set(k, (reasons.get(k) ?? 0) + 1); if (process.env.SHOWREF && k.includes(process.env.SHOWREF)) throw new Error('REF ' + k + ' ' + JSON.stringify(command)); return; } throw e; }
    ran++;
    const evil = `a[$(touch ${PW})]\`touch ${PW}\`'"$(touch ${PW}) *`;
    run(script, { N: evil });
    if (existsSync(PW)) { rmSync(PW); bad.push('INJECT ' + JSON.stringify(command) + ' => ' + JSON.stringify(script)); }
    const a = run(script, { N: '+Vq9+' });
    const b = run(command.split(T).join('+Vq9+'), {});
    if (a.out !== b.out || a.status !== b.status) { mism++; if (process.env.FAILDIFF) require('fs').writeFileSync('/tmp/fail.txt', command); if (process.env.FAILDIFF) throw new Error('DIFF ' + JSON.stringify(command) + ' => ' + JSON.stringify(script) + ` ${JSON.stringify(a)} vs ${JSON.stringify(b)}`); if (bad.length < 40) bad.push('DIFF ' + JSON.stringify(command) + ' => ' + JSON.stringify(script) + ` ${JSON.stringify(a)} vs ${JSON.stringify(b)}`); }
  }), { numRuns: Number(process.env.FUZZ_RUNS ?? 3000), seed: Number(process.env.FUZZ_SEED ?? 1) });
  console.log({ ran, refused, mism, noTok }, [...reasons], bad.join('\n'));
});
