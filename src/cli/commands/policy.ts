/*
 * `execgate policy check|explain|schema|show` (and `init`, in policy-init.ts): the tools an ops team uses on policy files.
 * Nothing here runs a command.
 */
import type { Command } from 'commander';
import { isAbsolute, relative } from 'node:path';
import { describeRunNetwork, formatRunNetwork, type RunNetwork } from '../../egress/describe';
import { getEnvironmentRoute, getRunRoute } from '../../egress/upstream';
import { getDefaultShell, normalizeRequest } from '../../plan/options';
import { decideRequest } from '../../policy/decide';
import { policyToDocument } from '../../policy/document';
import { DEFAULT_POLICY, EXEC_MODES, type EffectivePolicy, type ExecMode } from '../../policy/effective';
import { checkPolicyFile, loadPolicyFile } from '../../policy/load';
import { formatProblem } from '../../policy/problems';
import { getSchemaText } from '../../policy/schema';
import { readShell, type ShellAnalysis, type Word } from '../../shell';
import { getYaml } from '../../policy/source';
import { expandCommand, findProcessSource } from '../../refs/sources/process';
import { scanTokens } from '../../refs/tokens';
import { planSandbox, type SandboxReport } from '../../sandbox';
import { getHome } from '../../home';
import { CliExit, type CliIo } from '../io';
import { registerPolicyInitCommand } from './policy-init';

/** Exit status of `check` with an invalid file and of `explain` with a denial. */
const EXIT_REFUSED = 1;

const POLICY_HELP = `
Policy files are YAML or JSON, validated against the JSON Schema that \`execgate policy schema\`
prints; policies/README.md explains every key. Without --policy, explain and show use
$EXECGATE_POLICY, else the embedded default.

Examples:
  execgate policy check policies/*.yaml
  execgate policy explain --policy team.yaml -- 'git push origin main'
  execgate policy show --policy team.yaml
  execgate policy schema > execgate-policy.schema.json
`;

interface Loaded {
  readonly policy: EffectivePolicy;
  readonly files: readonly string[];
}

function loadFor(file: string | undefined, io: CliIo): Loaded {
  const chosen = file ?? (io.env.EXECGATE_POLICY || undefined);
  if (chosen === undefined) return { policy: DEFAULT_POLICY, files: [] };
  const loaded = loadPolicyFile(chosen, { cwd: io.cwd, homeDir: io.env.HOME || undefined });
  return { policy: loaded.policy, files: loaded.files };
}

function display(path: string, io: CliIo): string {
  const rel = relative(io.cwd ?? process.cwd(), path);
  return rel !== '' && !rel.startsWith('..') && !isAbsolute(rel) ? rel : path;
}

export function registerPolicyCommands(program: Command, io: CliIo): void {
  const policy = program
    .command('policy')
    .description('Check, explain and show policy files, or start one (nothing is run)')
    .enablePositionalOptions()
    .addHelpText('after', POLICY_HELP);

  policy
    .command('check')
    .description('Validate policy files: FILE:LINE:COL: messages, exit 0 when all are valid, 1 when not')
    .argument('<files...>', 'policy files (YAML or JSON)')
    .option('--json', 'print one JSON object with every result')
    .action((files: string[], flags: { json?: boolean }) => {
      let failed = false;
      const results = files.map((file) => {
        const result = checkPolicyFile(file, { cwd: io.cwd, homeDir: io.env.HOME || undefined });
        if (!result.ok) failed = true;
        return { file, result };
      });
      if (flags.json) {
        const json = {
          ok: !failed,
          files: results.map(({ file, result }) =>
            result.ok
              ? { file, ok: true, files: result.loaded.files, digest: result.loaded.digest }
              : { file, ok: false, problems: result.problems.map((problem) => ({ ...problem, text: formatProblem(problem) })) },
          ),
        };
        io.stdout.write(`${JSON.stringify(json, null, 2)}\n`);
      } else {
        for (const { file, result } of results) {
          if (result.ok) io.stdout.write(`${file}: ok\n`);
          else for (const problem of result.problems) io.stdout.write(`${formatProblem(problem)}\n`);
        }
      }
      if (failed) throw new CliExit(EXIT_REFUSED);
    });

  policy
    .command('explain')
    .description('Show the decision for a command and the rule that made it, without running it (exit 0 allowed, 1 denied)')
    .usage('[--policy FILE] [--mode MODE] [--cwd DIR] [--json] -- COMMAND')
    .argument('<command...>', 'the shell command (words after -- are joined with spaces)')
    .option('--policy <file>', 'policy file (default $EXECGATE_POLICY, else the embedded default)')
    .option('--mode <mode>', `${EXEC_MODES.join(', ')}`, 'sync')
    .option('--cwd <dir>', 'working directory the command would run in (default: the current directory)')
    .option('--json', 'print one JSON object')
    .passThroughOptions()
    .action(async (words: string[], flags: { policy?: string; mode: string; cwd?: string; json?: boolean }) => {
      const { policy: effective } = loadFor(flags.policy, io);
      const command = words.join(' ');
      const request = normalizeRequest(
        { command, mode: flags.mode as ExecMode, ...(flags.cwd !== undefined ? { cwd: flags.cwd } : {}) },
        { cwd: io.cwd ?? process.cwd(), shell: getDefaultShell(), policy: effective },
      );
      const tokens = scanTokens(request.command, { alias: effective.secrets.alias });
      const analysis = readShell(request.command, tokens);
      const decision = decideRequest(effective, request, tokens, analysis);
      const commands = analysis.commands.map((simple) => simple.words.map(describeWord));
      const contexts = describeContexts(analysis);
      const source = effective === DEFAULT_POLICY ? effective.source : display(effective.source, io);
      const sandbox = await describeSandbox(effective, request.cwd, request.pty, io.env);
      const network = describeNetwork(effective, sandbox, tokens.map((token) => `${token.kind}:${token.id}`), io.env);
      // Which `secrets.sources` entry would be asked for each reference (after the environment,
      // the keyring and the vault); nothing is run to find out.
      const askedOf = [...new Map(tokens.map((token) => [`${token.kind}:${token.id}`, token])).values()].flatMap((token) => {
        const spec = findProcessSource(effective.secrets.sources, token.kind, token.id);
        return spec ? [{ reference: `<<${token.kind}:${token.id}>>`, source: spec.name, command: expandCommand(spec, token.kind, token.id) }] : [];
      });
      if (flags.json) {
        io.stdout.write(
          `${JSON.stringify(
            {
              allowed: decision.allowed,
              decision: decision.allowed ? 'allow' : 'deny',
              rule: decision.rule,
              reason: decision.reason,
              policy: source,
              mode: request.mode,
              cwd: request.cwd,
              references: tokens.map((token) => token.raw),
              commands: analysis.commands.map((simple, index) => ({ words: commands[index], ...(simple.via ? { via: simple.via } : {}) })),
              tokens: contexts,
              uncertain: analysis.uncertain,
              sinks: analysis.sinks,
              sets: analysis.variables,
              sandbox,
              network,
              sources: askedOf,
            },
            null,
            2,
          )}\n`,
        );
      } else {
        const lines = [
          `decision:   ${decision.allowed ? 'allow' : 'deny'}`,
          `rule:       ${decision.rule ?? '-'}`,
          `reason:     ${decision.reason ?? '-'}`,
          `policy:     ${source}`,
          `mode, cwd:  ${request.mode}, ${request.cwd}`,
          `commands:   ${commands.length > 0 ? analysis.commands.map((simple, index) => `${commands[index].join(' ')}${simple.via ? ` (via ${simple.via})` : ''}`).join(' | ') : '-'}`,
          ...(tokens.length > 0 ? [`references: ${tokens.map((token) => token.raw).join(' ')}`] : []),
          ...askedOf.map((each) => `  ${each.reference}: from the environment, the keyring or the vault, else asked of source ${each.source} (${each.command.join(' ')})`),
          ...contexts.map((each) => `  ${each.reference} at ${each.offset}: ${each.refused ? 'refused' : 'substituted'}, ${each.context}${each.reason ? ` (${each.reason})` : ''}`),
          ...(analysis.uncertain.length > 0
            ? [`uncertain:  allow rules and secret restrictions do not match`, ...analysis.uncertain.map((finding) => `  at ${finding.offset}: ${finding.reason}`)]
            : ['uncertain:  -']),
          ...(analysis.sinks.length > 0 ? ['evaluates values as code (references refused):', ...analysis.sinks.map((finding) => `  at ${finding.offset}: ${finding.reason}`)] : []),
          ...(analysis.variables.length > 0 ? [`sets:       ${analysis.variables.map((variable) => `${variable.name ?? '(a name known only at run time)'} (${variable.how} at ${variable.offset})`).join(', ')}`] : []),
          ...formatSandbox(sandbox),
          `network:    ${formatRunNetwork(network)}`,
        ];
        io.stdout.write(`${lines.join('\n')}\n`);
      }
      if (!decision.allowed) throw new CliExit(EXIT_REFUSED);
    });

  policy
    .command('schema')
    .description('Print the JSON Schema of policy files (for editors and CI)')
    .action(() => {
      io.stdout.write(getSchemaText());
    });

  policy
    .command('show')
    .description('Print the resolved policy (after extends, every key filled in) as YAML, or JSON with --json')
    .option('--policy <file>', 'policy file (default $EXECGATE_POLICY, else the embedded default)')
    .option('--json', 'print JSON')
    .action(async (flags: { policy?: string; json?: boolean }) => {
      const loaded = loadFor(flags.policy, io);
      const document = policyToDocument(loaded.policy);
      if (flags.json) {
        io.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
        return;
      }
      // What a run in the current directory would get on this machine, as comments.
      const sandbox = await describeSandbox(loaded.policy, io.cwd ?? process.cwd(), false, io.env);
      const from = loaded.files.length === 0 ? [loaded.policy.source] : loaded.files.map((file) => display(file, io)).reverse();
      const header = [`# The resolved policy: ${from.join(' <- ')}`, '# (extends applied, every key filled in; itself a valid policy file)'];
      const sandboxLines = [...formatSandbox(sandbox), `network:    ${formatRunNetwork(describeNetwork(loaded.policy, sandbox, [], io.env))}`].map((line) => `# ${line}`);
      io.stdout.write(`${header.join('\n')}\n${getYaml().stringify(document, { lineWidth: 0 })}${sandboxLines.join('\n')}\n`);
    });

  registerPolicyInitCommand(policy, io);
}

/** A word as `policy explain` shows it: static as read (quotes removed), dynamic as written with `(?)`. */
function describeWord(word: Word): string {
  return word.dynamic ? `${word.text}(?)` : word.text;
}

function describeContexts(analysis: ShellAnalysis): Array<{ reference: string; offset: number; refused: boolean; context: string; reason?: string }> {
  return analysis.tokens.map(({ token, placement }) => ({
    reference: token.raw,
    offset: token.start,
    refused: placement.kind === 'refuse',
    context: placement.context,
    ...(placement.kind === 'refuse' && placement.reason ? { reason: placement.reason } : {}),
  }));
}

type SandboxDescription = SandboxReport | { readonly sandboxed: false; readonly refused: true; readonly reason: string };

/** The sandbox a run in `cwd` would get here (the platform is probed; nothing is run). */
async function describeSandbox(policy: EffectivePolicy, cwd: string, pty: boolean, env: NodeJS.ProcessEnv): Promise<SandboxDescription> {
  try {
    return (await planSandbox({ settings: policy.sandbox, context: { home: getHome(env) }, cwd, roots: policy.cwd.roots, workspace: cwd, env, pty })).report;
  } catch (error) {
    return { sandboxed: false, refused: true, reason: error instanceof Error ? error.message : String(error) };
  }
}

/** The network a run of `refs` would have: the egress mode through the proxy, its namespace, its bound secrets. */
function describeNetwork(policy: EffectivePolicy, sandbox: SandboxDescription, refs: readonly string[], env: NodeJS.ProcessEnv): RunNetwork {
  const sandboxed = sandbox.sandboxed;
  const own = policy.secrets.bind.some((binding) => binding.delivery === 'env' && refs.includes(binding.ref));
  let parent: string | undefined;
  try {
    const route = getRunRoute(policy.network.upstream, getEnvironmentRoute(env));
    const proxy = route.https ?? route.http;
    parent = proxy ? `${proxy.host}:${proxy.port}` : undefined;
  } catch {
    parent = undefined;
  }
  return describeRunNetwork({
    network: policy.network,
    bindings: policy.secrets.bind,
    refs,
    sandboxed,
    proxied: sandboxed && policy.network.mode !== 'none',
    shared: !own,
    ...(parent ? { parent } : {}),
  });
}

function formatSandbox(sandbox: SandboxDescription): string[] {
  if (!sandbox.sandboxed) {
    return [`sandbox:    ${'refused' in sandbox ? 'refused' : 'none'}: ${sandbox.reason}`];
  }
  return [
    `sandbox:    ${sandbox.mechanism} (${sandbox.helper}); namespaces ${sandbox.namespaces.join(', ')} (the network namespace has loopback only)`,
    `  hidden:   ${sandbox.hidden.join(' ')}`,
    `  writable: ${sandbox.writable.join(' ')}`,
    ...(sandbox.readOnly.length > 0 ? [`  readOnly: ${sandbox.readOnly.join(' ')}`] : []),
    ...(sandbox.exposed.length > 0 ? [`  exposed:  ${sandbox.exposed.join('; ')}`] : []),
  ];
}
