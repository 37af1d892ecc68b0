/*
 * `execgate policy init [--from default|strict|ci] FILE`: start a policy from a shipped one.
 *
 * The shipped files point their editors at `./schema.json`, which is right beside them and
 * wrong in a copy. The new file's schema line points at a schema that exists: the one of the
 * execgate that wrote it (relative when the file sits above it, as with a project-local
 * `node_modules/execgate`), or a copy written as `schema.json` beside the new file.
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, isAbsolute, relative, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import { ExecgateError } from '../../errors';
import { SCHEMA_PATH, getSchemaText } from '../../policy/schema';
import type { CliIo } from '../io';

const SHIPPED = ['default', 'strict', 'ci'] as const;
type Shipped = (typeof SHIPPED)[number];
const POLICIES_DIR = dirname(SCHEMA_PATH);
const MODELINE = /^# yaml-language-server: \$schema=\S+\n/;

interface InitFlags {
  from: Shipped;
  schema?: 'package' | 'copy';
  force?: boolean;
}

export function registerPolicyInitCommand(policy: Command, io: CliIo): void {
  policy
    .command('init')
    .description('Write a new policy file from a shipped one, its $schema pointing at a schema that exists')
    .argument('<file>', 'the policy file to write (YAML)')
    .addOption(new Option('--from <policy>', 'the shipped policy to start from').choices([...SHIPPED]).default('default'))
    .addOption(new Option('--schema <where>', "package: this execgate's schema.json (default when on disk); copy: write schema.json beside FILE").choices(['package', 'copy']))
    .option('--force', 'overwrite FILE (and schema.json beside it) if present')
    .addHelpText('after', '\nExample: execgate policy init --from strict /etc/execgate/team.yaml && execgate policy check /etc/execgate/team.yaml')
    .action((file: string, flags: InitFlags) => {
      const target = resolve(io.cwd ?? process.cwd(), file);
      const written = writePolicyFile(target, flags);
      for (const path of written) io.stdout.write(`${path}: written\n`);
      io.stdout.write(`Check it with: execgate policy check ${file}\n`);
    });
}

function refuseExisting(path: string): never {
  throw new ExecgateError('EXECGATE_ERR_POLICY_INIT_EXISTS', `\`${path}\` already exists; choose another name, remove it, or pass --force.`, { path });
}

/** Writes the policy (and the schema copy when asked for); returns the paths written. */
export function writePolicyFile(target: string, flags: InitFlags): string[] {
  if (existsSync(target) && !flags.force) refuseExisting(target);
  const copy = flags.schema === 'copy' || (flags.schema === undefined && !existsSync(SCHEMA_PATH));
  const written: string[] = [];
  let schemaRef: string;
  if (copy) {
    const schemaCopy = resolve(dirname(target), 'schema.json');
    const text = getSchemaText();
    // The same schema already there is fine; another file of that name is not ours to replace.
    const same = existsSync(schemaCopy) && readFileSync(schemaCopy, 'utf8') === text;
    if (existsSync(schemaCopy) && !same && !flags.force) refuseExisting(schemaCopy);
    if (!same) {
      writeFileSync(schemaCopy, text);
      written.push(schemaCopy);
    }
    schemaRef = './schema.json';
  } else {
    const rel = relative(dirname(target), SCHEMA_PATH);
    schemaRef = rel.startsWith('..') || isAbsolute(rel) ? SCHEMA_PATH : `./${rel}`;
  }
  const shipped = readFileSync(resolve(POLICIES_DIR, `${flags.from}.yaml`), 'utf8');
  const body = shipped.replace(MODELINE, '');
  const header = [
    `# yaml-language-server: $schema=${schemaRef}`,
    `# Started from execgate's shipped \`${flags.from}\` policy (\`execgate policy init --from ${flags.from}\`).`,
    '# `execgate policy show --policy THIS_FILE` prints every setting in force; policies/README.md explains each key.',
  ].join('\n');
  writeFileSync(target, `${header}\n${body}`);
  written.push(target);
  return written;
}
