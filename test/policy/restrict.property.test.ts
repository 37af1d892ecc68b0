/*
 * Property: a secret restricted to `git` reaches no other program. Generated texts combine the
 * restricted command with assignments, exports, wrappers and PATH tricks aimed at a workspace an
 * earlier run could have filled (a `./git`, a `plant/git`, a home directory and an XDG directory
 * whose git configuration runs `evil`, a BASH_ENV file). The policy decides on each text as a
 * gateway would (decideRequest, then the PATH lookup with the workspace writable); every text it
 * allows runs in real bash with real git behind a recorder on PATH. The oracle: every program
 * that ran with the value in its environment is the permitted `git`.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import fc from 'fast-check';
import { isExecgateError } from '../../src/errors';
import { decideProgramLookup, decideRequest } from '../../src/policy/decide';
import { loadPolicyFile } from '../../src/policy/load';
import { substituteTokens } from '../../src/refs/substitute';
import { scanTokens } from '../../src/refs/tokens';
import { readShell } from '../../src/shell';
import { makeTempDir } from '../helpers/tmp';

const VALUE = 'tok-VALUEMARK-5d1c7e';
const RUNS = Number(process.env.EXECGATE_FUZZ_RUNS ?? 0) > 0 ? Number(process.env.EXECGATE_FUZZ_RUNS) : 200;

let tmp: ReturnType<typeof makeTempDir>;
let bin: string;
let ws: string;
let path: string;
let policy: ReturnType<typeof loadPolicyFile>['policy'];

/** A recorder: appends its name, and whether the value was in its environment, to $LOG (whatever PATH it got). */
const recorder = (name: string, then = ''): string =>
  `#!/bin/sh\ncase "$(/usr/bin/env)" in *VALUEMARK*) echo "${name} value" >> "$LOG";; *) echo "${name}" >> "$LOG";; esac\n${then}`;

function write(file: string, text: string, mode = 0o644): void {
  writeFileSync(file, text);
  chmodSync(file, mode);
}

beforeAll(() => {
  tmp = makeTempDir('execgate-restrict-');
  bin = join(tmp.dir, 'bin');
  ws = join(tmp.dir, 'ws');
  for (const dir of [bin, ws, join(ws, 'plant'), join(ws, 'home'), join(ws, 'xdg', 'git'), join(ws, 'clean')]) mkdirSync(dir, { recursive: true });
  // The permitted program: real git, behind a recorder.
  write(join(bin, 'git'), recorder('git', 'exec /usr/bin/git "$@"\n'), 0o755);
  for (const name of ['evil', 't1']) write(join(bin, name), recorder(name), 0o755);
  // What an earlier run could have left in the workspace.
  write(join(ws, 'git'), recorder('planted'), 0o755);
  write(join(ws, 'plant', 'git'), recorder('planted'), 0o755);
  const config = '[alias]\n\tst = !evil\n[diff]\n\texternal = evil\n[core]\n\tpager = evil\n\tfsmonitor = evil\n';
  write(join(ws, 'home', '.gitconfig'), config);
  write(join(ws, 'xdg', 'git', 'config'), config);
  write(join(ws, 'bashenv'), 'evil\n');
  write(join(ws, 'a'), 'a\n');
  write(join(ws, 'b'), 'b\n');
  path = `${bin}:/usr/bin:/bin`;
  write(join(tmp.dir, 'policy.yaml'), `version: 1
secrets:
  restrict:
    - id: tok-for-git
      ref: secret:tok
      command: [git, env, nice, timeout, command]
`);
  policy = loadPolicyFile(join(tmp.dir, 'policy.yaml')).policy;
});
afterAll(() => tmp.cleanup());

/** A piece of a text: harmless more often than a trick, so that allowed texts are common too. */
const piece = (harmless: string[], tricks: string[]): fc.Arbitrary<string> =>
  fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...harmless) }, { weight: 1, arbitrary: fc.constantFrom(...tricks) });

const before = piece(['', 'LANG=C; ', 'git status; '], [
  'export PATH=.:$PATH; ', 'PATH=plant:$PATH; ', 'declare -x GIT_EXTERNAL_DIFF=evil; ', 'HOME=$PWD/home; export HOME; ', 'export XDG_CONFIG_HOME=$PWD/xdg; ',
  'BASH_ENV=$PWD/bashenv; export BASH_ENV; ', 'read -r PATH <<< plant; ', ': ${GIT_CONFIG_GLOBAL:=$PWD/home/.gitconfig}; export GIT_CONFIG_GLOBAL; ',
  'printf -v HOME %s "$PWD/home"; ', 'for PATH in plant; do :; done; ', 'cd plant; ', 'set -a; HOME=$PWD/home; ', 'typeset -x PATH=.; ', 'echo start; ',
  'mapfile -t PATH <<< plant; ', 'exec {PATH}>/dev/null; ', '(( PATH = 0 )); ', 'declare -n r=PATH; r=plant; ', 'x=plant; declare -x "PATH=$x"; ',
  "eval 'PATH=plant'; ", 'alias git=./git; ', 'git() { ./git "$@"; }; ',
]);
const assignment = piece(['', 'LANG=C ', 'GH_TOKEN=x ', 'TZ=UTC ', 'LC_ALL=C '], [
  'PATH=.:$PATH ', 'PATH=plant:$PATH ', 'HOME=$PWD/home ', 'XDG_CONFIG_HOME=$PWD/xdg ', "GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.st GIT_CONFIG_VALUE_0='!evil' ",
  'GIT_EXTERNAL_DIFF=evil ', 'GIT_CONFIG_GLOBAL=$PWD/home/.gitconfig ', 'GIT_CONFIG_PARAMETERS="\'core.pager=evil\'" ', 'BASH_ENV=$PWD/bashenv ',
]);
const wrapper = piece(['', 'env ', 'env X=1 ', 'nice ', 'nice -n 1 ', 'timeout 9 ', 'command ', 'env -u X '], ['env PATH=plant ', 'env HOME=$PWD/home ', "env -S'PATH=. X=1' ", 'env XDG_CONFIG_HOME=$PWD/xdg ']);
const token = '<<secret:tok>>';
const command = fc.constantFrom(`git st msg=${token}`, `GH_TOKEN=${token} git diff --no-index a b`, `git -c user.name=${token} st`, `git -c user.name=${token} diff --no-index a b`, `git version ${token}`, `git -c user.name=${token} log -1`);
const after = piece(['', '; git status', ' && git log -1'], ['; t1', ' | t1', ' && evil']);

const text = fc
  .tuple(before, fc.array(assignment, { maxLength: 2 }), fc.array(wrapper, { maxLength: 2 }), command, after)
  .map(([pre, assignments, wrappers, cmd, post]) => `${pre}${assignments.join('')}${wrappers.join('')}${cmd}${post}`);

const isWritable = (directory: string): boolean => directory === ws || directory.startsWith(`${ws}/`);

/** What the gateway would do: refuse (null) or the script it would run. */
function plan(command: string): string | null {
  const tokens = scanTokens(command);
  const analysis = readShell(command, tokens);
  const request = { command, mode: 'sync' as const, cwd: ws };
  if (!decideRequest(policy, request, tokens, analysis).allowed) return null;
  if (decideProgramLookup(policy, tokens, analysis, path, isWritable)) return null;
  try {
    return substituteTokens(command, tokens.map((each) => ({ token: each, envName: 'V0' })), analysis);
  } catch (error) {
    if (isExecgateError(error) && error.code === 'EXECGATE_ERR_REF_UNSAFE_CONTEXT') return null;
    throw error;
  }
}

let cases = 0;
function run(script: string): string[] {
  const log = join(tmp.dir, `log-${(cases += 1)}`);
  spawnSync('bash', ['--norc', '--noprofile', '-c', script], {
    cwd: ws,
    env: { PATH: path, LOG: log, HOME: join(ws, 'clean'), V0: VALUE, GIT_CONFIG_NOSYSTEM: '1' },
    stdio: 'ignore',
    timeout: 20_000,
  });
  const lines = existsSync(log) ? readFileSync(log, 'utf8').split('\n').filter(Boolean) : [];
  rmSync(log, { force: true });
  return lines;
}

test('no text the policy allows runs a program other than git with the value in its environment', () => {
  let allowed = 0;
  fc.assert(
    fc.property(text, (command) => {
      const script = plan(command);
      if (script === null) return;
      allowed += 1;
      const others = run(script).filter((line) => line.endsWith(' value') && line !== 'git value');
      if (others.length > 0) throw new Error(`${JSON.stringify(command)} ran ${others.join(', ')} with the value`);
    }),
    { numRuns: RUNS },
  );
  // The property is not vacuous: plain uses of git are allowed and run.
  expect(allowed).toBeGreaterThan(RUNS / 10);
});

test('the oracle sees each trick: run unchecked, the planted programs get the value', () => {
  // Without the policy's refusal, these texts hand the value to `planted` or `evil`.
  for (const [command, program] of [
    [`PATH=.:$PATH git st msg=${token}`, 'planted'],
    [`env PATH=plant git st msg=${token}`, 'planted'],
    [`HOME=$PWD/home git st msg=${token}`, 'evil'],
    [`XDG_CONFIG_HOME=$PWD/xdg git -c user.name=${token} diff --no-index a b`, 'evil'],
    [`GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.st GIT_CONFIG_VALUE_0='!evil' git st msg=${token}`, 'evil'],
    [`GIT_EXTERNAL_DIFF=evil GH_TOKEN=${token} git diff --no-index a b`, 'evil'],
  ] as const) {
    const tokens = scanTokens(command);
    const script = substituteTokens(command, tokens.map((each) => ({ token: each, envName: 'V0' })), readShell(command, tokens));
    expect(run(script)).toContain(`${program} value`);
    expect(plan(command)).toBeNull();
  }
});
