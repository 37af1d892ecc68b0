import { spawnSync } from 'node:child_process';
import { existsSync, readlinkSync } from 'node:fs';
import { join } from 'node:path';
import { ExecgateError, isExecgateError } from '../../src/errors';
import { substituteTokens, type Replacement } from '../../src/refs/substitute';
import { scanTokens } from '../../src/refs/tokens';
import { makeTempDir } from '../helpers/tmp';

// A minimal environment: nothing from the test runner's own environment reaches the shell.
function shellEnv(extra: Record<string, string>): Record<string, string> {
  return { PATH: '/usr/bin:/bin', LANG: 'C.UTF-8', ...extra };
}

/** Replace every token of `command`; the same raw token always gets the same variable. */
function rewrite(command: string, only?: readonly string[]): { script: string; names: Map<string, string> } {
  const names = new Map<string, string>();
  const replacements: Replacement[] = [];
  for (const token of scanTokens(command)) {
    if (only && !only.includes(token.raw)) continue;
    if (!names.has(token.raw)) names.set(token.raw, `EXECGATE_REF_${names.size}`);
    replacements.push({ token, envName: names.get(token.raw) as string });
  }
  return { script: substituteTokens(command, replacements), names };
}

/** Rewrite `command`, run it with `shell -c` with `values` in the environment, return stdout. */
function run(command: string, values: Record<string, string>, shell = 'bash', cwd?: string): string {
  const { script, names } = rewrite(command, Object.keys(values));
  const env: Record<string, string> = {};
  for (const [raw, value] of Object.entries(values)) {
    // Short values can occur in the command text by chance; the long ones must never be there.
    if (value.length >= 8) expect(script).not.toContain(value);
    env[names.get(raw) as string] = value;
  }
  const child = spawnSync(shell, ['-c', script], { env: shellEnv(env), encoding: 'utf8', cwd });
  if (child.status !== 0) throw new Error(`${shell} failed (${child.status}): ${child.stderr}\nscript: ${script}`);
  return child.stdout;
}

function refusal(command: string): ExecgateError {
  try {
    rewrite(command);
  } catch (error) {
    if (isExecgateError(error)) return error;
    throw error;
  }
  throw new Error(`expected substitution of ${JSON.stringify(command)} to be refused`);
}

const NASTY = `a b  *?[x] $(touch pwned) \${HOME} \`id\` '"\\ ; & | # ~ ä 🙂\n\tend`;
const T = '<<secret:tok>>';
const dash = (() => {
  try {
    return readlinkSync('/bin/sh').endsWith('dash');
  } catch {
    return false;
  }
})();

describe('substituteTokens: no work to do', () => {
  test('a command without tokens comes back unchanged', () => {
    const command = `echo "hi" 'there' $(date) <<EOF\nbody\nEOF\n`;
    expect(substituteTokens(command, [])).toBe(command);
    expect(rewrite(command).script).toBe(command);
  });

  test('tokens not in the replacements stay literal, byte for byte', () => {
    const command = `printf '%s|' <<secret:a>> "<<secret:b>>" '{{decrypt:c}}'`;
    expect(substituteTokens(command, [])).toBe(command);
    const { script } = rewrite(command, ['<<secret:b>>']);
    expect(script).toBe(`printf '%s|' <<secret:a>> "\${EXECGATE_REF_0}" '{{decrypt:c}}'`);
  });

  test('a token left literal in unquoted text is read as shell text around the replaced ones', () => {
    // The unreplaced `<<secret:a>>` is a heredoc operator to bash (delimiter `secret:a`), so the
    // replaced token on the next line is inside that heredoc body.
    const command = `cat <<secret:a>>/dev/null\n<<secret:b>>\nsecret:a\nprintf %s <<secret:b>>`;
    const { script } = rewrite(command, ['<<secret:b>>']);
    expect(script).toBe(`cat <<secret:a>>/dev/null\n\${EXECGATE_REF_0}\nsecret:a\nprintf %s "\${EXECGATE_REF_0}"`);
  });
});

describe('substituteTokens: contexts, run with real bash', () => {
  const value = NASTY;
  const v = { [T]: value };

  test('unquoted word: one word, no splitting, no globbing', () => {
    expect(rewrite(`printf '[%s]' ${T}`).script).toBe(`printf '[%s]' "\${EXECGATE_REF_0}"`);
    expect(run(`printf '[%s]' ${T}`, v)).toBe(`[${value}]`);
  });

  test('unquoted, adjacent to text on both sides', () => {
    expect(run(`printf '[%s]' --token=${T}`, v)).toBe(`[--token=${value}]`);
    expect(run(`printf '[%s]' x${T}y`, v)).toBe(`[x${value}y]`);
    expect(run(`printf '[%s]' "a"${T}'b'`, v)).toBe(`[a${value}b]`);
    expect(run(`X=${T}; printf '[%s]' "$X"`, v)).toBe(`[${value}]`);
  });

  test('unquoted in other word positions: here-string, redirection target, case pattern, [[ == ]]', () => {
    expect(run(`cat <<<${T}`, v)).toBe(`${value}\n`);
    expect(run(`cat <<< ${T}`, v)).toBe(`${value}\n`);
    expect(run(`cat <<<<<secret:tok>>`, v)).toBe(`${value}\n`);
    expect(run(`case "$X" in ${T}) echo no;; *) echo other;; esac`, { [T]: '*' })).toBe('other\n');
    expect(run(`X='*'; case "$X" in ${T}) echo literal;; *) echo other;; esac`, { [T]: '*' })).toBe('literal\n');
    expect(run(`[[ abc == ${T} ]] && echo glob || echo literal`, { [T]: 'a*' })).toBe('literal\n');
    expect(run(`for w in ${T} two; do printf '[%s]' "$w"; done`, v)).toBe(`[${value}][two]`);
  });

  test('a redirection target gets the whole value as a file name', () => {
    const { dir, cleanup } = makeTempDir();
    try {
      run(`printf hi > ${T}`, { [T]: 'out file *' }, 'bash', dir);
      expect(existsSync(join(dir, 'out file *'))).toBe(true);
    } finally {
      cleanup();
    }
  });

  test('inside "..."', () => {
    expect(rewrite(`echo "pre ${T} post"`).script).toBe('echo "pre ${EXECGATE_REF_0} post"');
    expect(run(`printf '[%s]' "pre ${T} post"`, v)).toBe(`[pre ${value} post]`);
    expect(run(`printf '[%s]' "\\$${T}"`, v)).toBe(`[$${value}]`);
    expect(run(`printf '[%s]' "\\\\${T}"`, v)).toBe(`[\\${value}]`);
    // `$$` is the shell's PID; the reference after it is a new part of the word.
    expect(run(`printf %s "$$${T}" $$${T} | tr -d 0-9`, v)).toBe(value + value);
  });

  test("inside '...'", () => {
    expect(rewrite(`echo 'pre ${T} post'`).script).toBe(`echo 'pre '"\${EXECGATE_REF_0}"' post'`);
    expect(run(`printf '[%s]' 'pre $HOME ${T} "post"'`, v)).toBe(`[pre $HOME ${value} "post"]`);
    expect(run(`printf '[%s]' '${T}'`, v)).toBe(`[${value}]`);
  });

  test('unquoted heredoc body', () => {
    expect(run(`cat <<EOF\nline ${T} "q" 'q'\nEOF`, v)).toBe(`line ${value} "q" 'q'\n`);
    expect(run(`cat << EOF\n${T}\nEOF\nprintf '[%s]' ${T}`, v)).toBe(`${value}\n[${value}]`);
  });

  test('<<- heredoc strips tabs, and finds an indented delimiter', () => {
    expect(run(`cat <<-END\n\t\t${T}\n\tEND\necho after`, v)).toBe(`${value}\nafter\n`);
  });

  test('two heredocs on one line, bodies in order', () => {
    expect(rewrite(`cat <<A <<'B'\n1 ${T}\nA\n2 $HOME\nB\n`).script).toBe(`cat <<A <<'B'\n1 \${EXECGATE_REF_0}\nA\n2 $HOME\nB\n`);
    expect(() => rewrite(`cat <<A <<'B'\n1\nA\n2 ${T}\nB\n`)).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_REF_UNSAFE_CONTEXT' }));
    expect(run(`cat <<A; cat <<B\n1 ${T}\nA\n2 ${T}\nB\n`, v)).toBe(`1 ${value}\n2 ${value}\n`);
  });

  test('a heredoc body line holding a token never ends the heredoc', () => {
    // The delimiter is the alias token text itself (left literal); the body line holding the same
    // text is replaced, so bash compares `${...}` with the delimiter and reads on.
    const command = `cat <<{{secret:tok}}\n{{secret:tok}}\nx\n{{secret:tok}}\necho after`;
    const [, body] = scanTokens(command);
    const script = substituteTokens(command, [{ token: body!, envName: 'V' }]);
    expect(script).toBe(`cat <<{{secret:tok}}\n\${V}\nx\n{{secret:tok}}\necho after`);
    const child = spawnSync('bash', ['-c', script], { env: shellEnv({ V: 'value' }), encoding: 'utf8' });
    expect(child.stdout).toBe('value\nx\nafter\n');
  });

  test('a heredoc body continued with a backslash-newline', () => {
    expect(run(`cat <<EOF\n${T}\\\nEOF\nEOF\n`, v)).toBe(`${value}EOF\n`);
  });

  test('inside $(...), "$(...)" and nested substitutions', () => {
    expect(run(`printf '[%s]' "$(printf %s ${T})"`, v)).toBe(`[${value}]`);
    expect(run(`printf '[%s]' "$(printf %s "pre ${T}")"`, v)).toBe(`[pre ${value}]`);
    expect(run(`printf '[%s]' "$(echo "$(printf %s '${T}' | tr -d '\\n')" )"`, v)).toBe(`[${value.replace(/\n/g, '')}]`);
    expect(run(`printf '[%s]' $(printf %s ${T} | wc -c)`, v)).toBe(`[${Buffer.byteLength(value)}]`);
  });

  test('inside backquotes, plain and nested, inside and outside "..."', () => {
    expect(run(`printf '[%s]' "\`printf %s ${T}\`"`, v)).toBe(`[${value}]`);
    expect(run(`printf '[%s]' "\`printf %s \\"${T}\\"\`"`, v)).toBe(`[${value}]`);
    expect(run(`x=\`printf %s ${T}\`; printf '[%s]' "$x"`, v)).toBe(`[${value}]`);
    expect(run(`x=\`echo \\\`printf %s ${T}\\\`\`; printf '[%s]' "$x"`, { [T]: 'a b' })).toBe('[a b]');
  });

  test('inside <(...) and >(...)', () => {
    expect(run(`cat <(printf %s ${T})`, v)).toBe(value);
  });

  test('inside ${...} words and patterns', () => {
    expect(run(`printf '[%s]' \${UNSET:-${T}}`, v)).toBe(`[${value}]`);
    expect(run(`printf '[%s]' "\${UNSET:-${T}}"`, v)).toBe(`[${value}]`);
    expect(run(`printf '[%s]' "\${UNSET:-"${T}"}"`, v)).toBe(`[${value}]`);
    expect(run(`printf '[%s]' \${UNSET:-'${T}'}`, v)).toBe(`[${value}]`);
    expect(run(`X='a*b'; printf '[%s]' "\${X#${T}}"`, { [T]: 'a*' })).toBe('[b]');
    expect(run(`X='abcb'; printf '[%s]' "\${X#${T}}"`, { [T]: 'a*' })).toBe('[abcb]');
    expect(run(`X='xay'; printf '[%s]' "\${X/a/${T}}"`, { [T]: '&' })).toBe('[x&y]');
  });

  test('inside $(...) with a case statement and a subshell', () => {
    const command = `printf '[%s]' "$(case x in (y) echo no;; x) (printf %s ${T});; esac)"`;
    expect(run(command, v)).toBe(`[${value}]`);
    expect(run(`printf '[%s]' "$(case x in x) printf %s ')';; esac)${T}"`, { [T]: 'v' })).toBe('[)v]');
  });

  test('a comment keeps the token literal', () => {
    expect(rewrite(`echo hi # ${T}`).script).toBe(`echo hi # ${T}`);
    expect(rewrite(`echo hi #${T}\necho ${T}`).script).toBe(`echo hi #${T}\necho "\${EXECGATE_REF_0}"`);
    expect(rewrite(`echo a#${T}`).script).toBe('echo a#"${EXECGATE_REF_0}"');
    expect(run(`printf '[%s]' "$(printf %s ${T} # ${T} )\n)"`, v)).toBe(`[${value}]`);
  });

  test('a line continuation inside a word', () => {
    expect(run(`printf '[%s]' a\\\n${T}`, v)).toBe(`[a${value}]`);
  });

  test('[[ ... ]] without arithmetic operators accepts tokens', () => {
    expect(run(`[[ -n ${T} && ${T} == "$(printf %s ${T})" ]] && echo same`, v)).toBe('same\n');
  });

  test('alias tokens, several tokens, and the same token twice', () => {
    const values = { '<<secret:a>>': 'A "1"', '{{decrypt:b}}': "B '2'", '<<decrypt:c>>': 'C $3' };
    const command = `printf '[%s]' <<secret:a>> "{{decrypt:b}}" '<<decrypt:c>>' <<secret:a>>-{{decrypt:b}}`;
    expect(run(command, values)).toBe(`[A "1"][B '2'][C $3][A "1"-B '2']`);
    expect(rewrite(command).script).toBe(
      `printf '[%s]' "\${EXECGATE_REF_0}" "\${EXECGATE_REF_1}" ''"\${EXECGATE_REF_2}"'' "\${EXECGATE_REF_0}"-"\${EXECGATE_REF_1}"`,
    );
  });

  test('an empty value is one empty word', () => {
    expect(run(`printf '[%s]' ${T} x`, { [T]: '' })).toBe('[][x]');
  });

  (dash ? test : test.skip)('the same scripts run under sh (dash)', () => {
    expect(run(`printf '[%s]' ${T} "${T}" '${T}' x${T}y`, v, 'sh')).toBe(`[${value}][${value}][${value}][x${value}y]`);
    expect(run(`cat <<EOF\n${T}\nEOF`, v, 'sh')).toBe(`${value}\n`);
    expect(run(`printf '[%s]' "$(printf %s ${T})" "\`printf %s ${T}\`"`, v, 'sh')).toBe(`[${value}][${value}]`);
    expect(run(`printf '[%s]' "\${UNSET:-"${T}"}" \${UNSET:-${T}}`, v, 'sh')).toBe(`[${value}][${value}]`);
    expect(run(`X='a*b'; printf '[%s]' "\${X#${T}}"`, { [T]: 'a*' }, 'sh')).toBe('[b]');
  });
});

describe('substituteTokens: refused contexts', () => {
  test.each([
    ['quoted-heredoc', `cat <<'EOF'\n${T}\nEOF`],
    ['quoted-heredoc', `cat <<"EOF"\n${T}\nEOF`],
    ['quoted-heredoc', `cat <<\\EOF\n${T}\nEOF`],
    ['quoted-heredoc', `cat <<-E"O"F\n\t${T}\n\tEOF`],
    ['heredoc-delimiter', 'cat <<<<secret:tok>>\nx\n'],
    ['heredoc-delimiter', `cat << ${T}`],
    ['ansi-c-string', `echo $'a ${T}'`],
    ['locale-string', `echo $"a ${T}"`],
    ['arithmetic', `echo $(( ${T} + 1 ))`],
    ['arithmetic', `(( x = ${T} ))`],
    ['arithmetic', `for (( i = 0; i < ${T}; i++ )); do :; done`],
    ['arithmetic', `echo $[ ${T} ]`],
    ['arithmetic', `a[${T}]=1`],
    ['arithmetic', `unset a[${T}]`],
    ['arithmetic', `echo \${a[${T}]}`],
    ['arithmetic', `echo "\${x:${T}}"`],
    ['arithmetic', `echo $(( $(printf %s ${T} | wc -c) ))`],
    ['arithmetic', `echo $(( \`printf %s ${T}\` ))`],
    ['conditional-arithmetic', `[[ ${T} -eq 1 ]]`],
    ['conditional-arithmetic', `if [[ 1 -lt "$(echo ${T})" ]]; then :; fi`],
    ['evaluated', `eval echo ${T}`],
    ['evaluated', `eval "echo ${T}"`],
    ['evaluated', `builtin eval 'echo ${T}'`],
    ['evaluated', `eval "$(printf %s ${T})"`],
    ['evaluated', `trap 'echo ${T}' EXIT`],
    ['evaluated', `declare -i x=${T}`],
    ['evaluated', `f() { local -n ref=${T}; }`],
    ['arithmetic', `let x=${T}`],
    ['shell-script', `bash -c 'echo ${T}'`],
    ['shell-script', `sh -c "curl -H 'X: ${T}'"`],
    ['shell-script', `sudo -u app /bin/bash -lc 'echo ${T}'`],
    ['shell-script', `find . -exec sh -c 'echo ${T}' \\;`],
    ['shell-script', `bash <<EOF\necho ${T}\nEOF`],
    ['shell-script', `bash <<< "echo ${T}"`],
    ['variable-name', `declare ${T}`],
    ['variable-name', `export ${T}=1`],
    ['variable-name', `read -r ${T}`],
    ['variable-name', `unset ${T}`],
    ['variable-name', `printf -v ${T} %s x`],
    ['variable-name', `[ -v ${T} ]`],
    ['variable-name', `[[ -v ${T} ]]`],
    ['remote-command', `ssh host echo ${T}`],
    ['remote-command', `ssh host "echo ${T}"`],
    ['remote-command', `ssh host <<EOF\necho ${T}\nEOF`],
    ['parameter-name', `echo \${${T}}`],
    ['parameter-name', `echo \${x${T}}`],
    ['escaped', `echo \\${T}`],
    ['escaped', `echo "\\${T}"`],
    ['after-dollar', `echo $${T}`],
    ['after-dollar', `echo "$${T}"`],
    ['after-dollar', 'echo ${{secret:tok}}'],
    ['uncertain', `echo "${T}`],
    ['uncertain', `echo '${T}`],
    ['uncertain', `echo $(echo ${T}`],
    ['uncertain', `echo \`echo ${T}`],
    ['uncertain', `echo "\${x:-'${T}'}"`],
    ['uncertain', `cat <<$X\n${T}\n$X`],
  ])('%s: %j', (context, command) => {
    const error = refusal(command);
    expect(error.code).toBe('EXECGATE_ERR_REF_UNSAFE_CONTEXT');
    expect(error.details).toMatchObject({ context });
    const reference = scanTokens(command)[0]?.raw as string;
    expect(error.details.reference).toBe(reference);
    expect(error.message).toContain(reference);
    expect(error.message).toMatch(/To fix it, /);
  });

  test('the message names the reference and the context and says how to fix it', () => {
    const error = refusal(`cat <<'EOF'\n<<secret:db-password>>\nEOF`);
    expect(error.message).toBe(
      "The reference <<secret:db-password>> sits in the body of a quoted heredoc (<<'EOF', <<\"EOF\" or <<\\EOF), where the shell expands nothing, so execgate cannot pass its value safely and refuses to run the command. To fix it, use an unquoted delimiter (<<EOF) or move the reference out of the heredoc.",
    );
  });

  test('a token left unreplaced in an unsafe context is not refused', () => {
    const command = `cat <<'EOF'\n<<secret:unknown>>\nEOF\necho ${T}`;
    expect(rewrite(command, [T]).script).toBe(`cat <<'EOF'\n<<secret:unknown>>\nEOF\necho "\${EXECGATE_REF_0}"`);
  });

  test('the first refused token is the one reported', () => {
    const error = refusal(`echo $'<<secret:first>>' "$((<<secret:second>>))"`);
    expect(error.details.reference).toBe('<<secret:first>>');
  });

  test('an unterminated construct after the tokens still refuses the whole command', () => {
    const error = refusal(`echo ${T}; echo "unterminated`);
    expect(error.details).toMatchObject({ context: 'uncertain', reference: T });
    expect(error.message).toMatch(/unterminated double-quoted string/);
  });

  test('commands that parse code elsewhere accept references in their data positions', () => {
    const v = { [T]: `x'"; touch pwned; $(id) \`id\`` };
    expect(run(`bash -c 'printf "[%s]" "$1"' _ ${T}`, v)).toBe(`[${v[T]}]`);
    expect(run(`sh -c 'printf "[%s]" "$0"' ${T}`, v)).toBe(`[${v[T]}]`);
    expect(run(`export TOKEN=${T}; printf '[%s]' "$TOKEN"`, v)).toBe(`[${v[T]}]`);
    expect(run(`declare -r K=${T}; printf '[%s]' "$K"`, v)).toBe(`[${v[T]}]`);
    expect(run(`f() { local x=${T}; printf '[%s]' "$x"; }; f`, v)).toBe(`[${v[T]}]`);
    expect(run(`V=${T}; eval 'printf "[%s]" "$V"'`, v)).toBe(`[${v[T]}]`);
    expect(run(`printf %s ${T} | bash -c 'IFS= read -r x; printf "[%s]" "$x"'`, v)).toBe(`[${v[T]}]`);
    expect(run(`read -r x <<< ${T}; printf '[%s]' "$x"`, { [T]: 'a b' })).toBe('[a b]');
    expect(run(`bash -c 'cat' < <(printf %s ${T})`, v)).toBe(v[T]);
    expect(rewrite(`sshpass -p ${T} ssh host true`).script).toBe('sshpass -p "${EXECGATE_REF_0}" ssh host true');
    expect(rewrite(`bash script.sh ${T}`).script).toBe('bash script.sh "${EXECGATE_REF_0}"');
    expect(rewrite(`echo ${T}; eval true`).script).toBe('echo "${EXECGATE_REF_0}"; eval true');
  });

  test('absurd nesting is refused with the coded error, not a crash', () => {
    let command = `echo ${T}`;
    for (let level = 0; level < 500; level += 1) command = `cat <<E${level}\n$(${command}\n)\nE${level}`;
    expect(refusal(command).message).toMatch(/more than \d+ levels deep/);
  });

  test('a long command is rewritten in linear time', () => {
    const line = `echo "a ${T} $(printf %s ${T})" '${T}' \`echo ${T}\`; cat <<EOF\n${T}\nEOF\n`;
    const command = line.repeat(Math.ceil(120_000 / line.length));
    const { script } = rewrite(command);
    expect(script).not.toContain('<<secret:');
  });

  test('tokens after arithmetic that is closed are fine again', () => {
    expect(run(`echo $(( 1 + 2 )) ${T} "$(( 3 ))"`, { [T]: 'v' })).toBe('3 v 3\n');
  });
});

describe('substituteTokens: argument checks', () => {
  const command = `echo ${T}`;
  const token = scanTokens(command)[0]!;

  test.each([
    ['an invalid envName', [{ token, envName: '1X' }]],
    ['an envName with a space', [{ token, envName: 'A B' }]],
    ['a token at the wrong offset', [{ token: { ...token, start: 0, end: token.raw.length }, envName: 'A' }]],
    ['a token that is not a token', [{ token: { ...token, raw: 'echo' }, envName: 'A' }]],
    ['the same token twice', [{ token, envName: 'A' }, { token, envName: 'B' }]],
    ['a non-object', [null]],
  ])('refuses %s', (_name, replacements) => {
    expect(() => substituteTokens(command, replacements as unknown as Replacement[])).toThrow(
      expect.objectContaining({ code: 'EXECGATE_ERR_REF_REPLACEMENT_INVALID' }),
    );
  });

  test('accepts replacements in any order', () => {
    const both = `echo <<secret:a>> <<secret:b>>`;
    const [a, b] = scanTokens(both);
    expect(substituteTokens(both, [{ token: b!, envName: 'B' }, { token: a!, envName: 'A' }])).toBe('echo "${A}" "${B}"');
  });
});
