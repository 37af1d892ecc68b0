/*
 * `execgate demo`: the main job on embedded defaults, end to end. A secret arrives through the
 * environment source, a command references it, the shell receives the real value (proved by
 * hashing it inside the shell), the output shows it masked, and the audit records of the run
 * are printed. Then the sandbox at work: the command tries to read the gateway's own
 * environment through /proc/$PPID/environ, and finds only its sandbox. Then the other half: a
 * policy refusing a command before anything runs.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { Command } from 'commander';
import { createGateway } from '../../gateway';
import { getCurrentUser } from '../user';
import { isExecgateError } from '../../errors';
import { getShippedPolicyPath } from '../../policy/load';
import { getEnvSecretName } from '../../refs/sources/env';
import type { CliIo } from '../io';

const DEMO_SECRET = 'demo-token';

export function registerDemoCommand(program: Command, io: CliIo): void {
  program
    .command('demo')
    .description(`Show the main job: resolve <<secret:${DEMO_SECRET}>> from ${getEnvSecretName(DEMO_SECRET)}, run, mask, audit`)
    .action(async () => {
      await demoAction(io);
    });
}

async function demoAction(io: CliIo): Promise<void> {
  const variable = getEnvSecretName(DEMO_SECRET);
  const env = { ...io.env };
  let generated = false;
  if (!env[variable]) {
    env[variable] = `demo-${randomBytes(12).toString('base64url')}`;
    generated = true;
  }
  const expected = createHash('sha256').update(env[variable]).digest('hex');
  const gateway = createGateway({ env, cwd: io.cwd });
  const command = `echo "the shell received: <<secret:${DEMO_SECRET}>>"; printf %s <<secret:${DEMO_SECRET}>> | sha256sum`;
  const say = (line = ''): void => { io.stdout.write(`${line}\n`); };
  try {
    say(`secret source : ${variable} (${generated ? 'a random value generated for this demo' : 'from your environment'})`);
    say(`command       : ${command}`);
    const result = await gateway.exec({ command, actor: `cli:${getCurrentUser()}` });
    say('');
    say('--- output as the caller sees it ---');
    io.stdout.write(result.output);
    say('------------------------------------');
    const hashInShell = result.stdout.match(/\b[0-9a-f]{64}\b/)?.[0];
    say(`exit code     : ${result.exitCode}`);
    say(`redactions    : ${result.redactions}`);
    say(`value intact  : ${hashInShell === expected ? 'yes (sha256 computed inside the shell matches)' : 'NO'}`);
    say(`env withheld  : ${result.env.withheld.join(', ') || '(none)'}`);
    say(`env removed   : ${result.env.removed.join(', ') || '(none)'}`);
    await demoSandbox(gateway, say);
    say('');
    say(`--- audit records for ${result.id} (${gateway.home}/audit.log) ---`);
    await gateway.close();
    const records = readFileSync(`${gateway.home}/audit.log`, 'utf8')
      .split('\n')
      .filter((line) => line.includes(`"runId":"${result.id}"`));
    for (const line of records) say(line);
  } finally {
    await gateway.close();
  }
  await showDenial(io, env, say);
}

/** The shipped strict policy refuses `sudo`: the refusal, its rule and reason, and its audit record. */
async function showDenial(io: CliIo, env: NodeJS.ProcessEnv, say: (line?: string) => void): Promise<void> {
  const policyFile = getShippedPolicyPath('strict') as string;
  const gateway = createGateway({ env, cwd: io.cwd, policyFile });
  const command = 'sudo id';
  say('');
  say('--- a denial: the shipped strict policy (policies/strict.yaml) ---');
  say(`command       : ${command}`);
  try {
    await gateway.exec({ command, actor: `cli:${getCurrentUser()}` });
    say('refused       : NO (the command ran)');
  } catch (error) {
    if (!isExecgateError(error) || error.code !== 'EXECGATE_ERR_POLICY_DENIED') throw error;
    say(`refused       : ${error.code} (rule ${String(error.details.rule)}), nothing was run`);
    say(`reason        : ${String(error.details.reason)}`);
  } finally {
    await gateway.close();
  }
  const denied = readFileSync(`${gateway.home}/audit.log`, 'utf8').split('\n').filter((line) => line.includes('"event":"exec.denied"')).pop();
  if (denied !== undefined) say(`audit record  : ${denied}`);
}

/** The read the issue's threat model starts from: the gateway's environment, from inside a run. */
async function demoSandbox(gateway: ReturnType<typeof createGateway>, say: (line?: string) => void): Promise<void> {
  const probe = 'tr "\\0" "\\n" < /proc/$PPID/environ | grep -c EXECGATE_SECRET_; echo "processes visible: $(ls -d /proc/[0-9]* | wc -l)"';
  say('');
  say(`sandbox probe : ${probe}`);
  const result = await gateway.exec({ command: probe, actor: `cli:${getCurrentUser()}` });
  say(`sandbox       : ${result.sandbox.sandboxed ? 'yes (bubblewrap: own user, PID, mount, IPC, UTS and network namespaces, a seccomp filter; state directory and credentials hidden; mounts checked against the plan before it started)' : `NO: ${result.sandbox.reason}`}`);
  say(`probe found   : ${result.stdout.trim().split('\n').join('; ')} (EXECGATE_SECRET_* variables in its parent's environment; ${result.sandbox.sandboxed ? 'the parent is the sandbox, not the gateway' : 'unsandboxed, the parent is the gateway'})`);
}
