/*
 * Assignments are part of the command. A text's `NAME=value` words (before a command or alone),
 * and the variables it exports or sets any other way (`export`, `declare -x`, `env NAME=...`,
 * `read`, `printf -v`, `${NAME:=...}`, ...), reach the programs it runs: `PATH=. git`,
 * `GIT_CONFIG_COUNT=1 ... git st` and `BASH_ENV=x git` run other code than the `git` a rule
 * names. So a word-form allow rule and a per-secret restriction do not match a text that sets a
 * variable that steers which program runs or what it loads (env/hazards.ts isSteeringName, and
 * the policy's own `env.strip`), or a variable whose name is known only at run time.
 */
import { compileNameList, isSteeringName, matchesNameList } from '../env/hazards';
import type { ShellAnalysis, VariableSet } from '../shell';

/** The first variable `analysis` sets that steers a program, or undefined. */
export function findSteering(analysis: ShellAnalysis, strip: readonly string[]): VariableSet | undefined {
  const stripped = compileNameList(strip);
  return analysis.variables.find((variable) => variable.name === null || isSteeringName(variable.name) || matchesNameList(stripped, variable.name));
}

/** "sets `PATH` (a `NAME=value` word at offset 0)", for decisions and `policy explain`. */
export function describeSteering(variable: VariableSet): string {
  const how = HOW[variable.how] ?? `\`${variable.how}\``;
  return variable.name === null
    ? `can set a variable whose name is known only at run time (${how} at offset ${variable.offset})`
    : `sets \`${variable.name}\` (${how} at offset ${variable.offset})`;
}

const HOW: Readonly<Record<string, string>> = {
  assignment: 'a `NAME=value` word',
  env: '`env NAME=value`',
  for: 'a `for` loop variable',
  default: 'a `${NAME:=value}` expansion',
  arithmetic: 'an arithmetic assignment',
  'conditional arithmetic': 'an arithmetic operand of `[[ ]]`',
  redirection: 'a `{NAME}>` redirection',
  evaluated: 'code evaluated at run time',
};
