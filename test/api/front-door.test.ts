/*
 * The front door: what `execgate` and its subpaths export, that each name is documented, that the
 * core import loads none of the add-ons, and that a consumer's `tsc` accepts the types under the
 * three module settings projects use (Node16 CommonJS, NodeNext ESM, Bundler) with nothing but what
 * installs with execgate.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import ts from 'typescript';
import { makeTempDir } from '../helpers/tmp';

const ROOT = join(__dirname, '..', '..');
const LOCK = JSON.parse(readFileSync(join(ROOT, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dev?: boolean }> };
const PACKAGE = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { peerDependencies?: Record<string, string> };
const ENTRIES: Record<string, string> = {
  execgate: 'src/index.ts',
  'execgate/mcp': 'src/mcp/index.ts',
  'execgate/tools': 'src/tools/index.ts',
  'execgate/agent': 'src/agent/index.ts',
  'execgate/parts': 'src/parts.ts',
};

function exportedSymbols(program: ts.Program, file: string): ts.Symbol[] {
  const checker = program.getTypeChecker();
  const source = program.getSourceFile(join(ROOT, file));
  if (!source) throw new Error(`${file} is not in the program`);
  const module = checker.getSymbolAtLocation(source);
  if (!module) throw new Error(`${file} has no module symbol`);
  return checker.getExportsOfModule(module);
}

describe('the front door', () => {
  const program = ts.createProgram(Object.values(ENTRIES).map((file) => join(ROOT, file)), {
    target: ts.ScriptTarget.ES2022, module: ts.ModuleKind.CommonJS, strict: true, esModuleInterop: true, skipLibCheck: true,
  });
  const checker = program.getTypeChecker();

  it('keeps the core small: the gateway, its request and result types, errors, policy loading and the platform check', () => {
    const names = exportedSymbols(program, ENTRIES.execgate).map((symbol) => symbol.getName()).sort();
    expect(names).toEqual([
      'BackgroundManager', 'BackgroundProcess', 'BackgroundState', 'BackgroundStatus', 'DEFAULT_POLICY', 'ERROR_CATALOG',
      'EffectivePolicy', 'ErrorCode', 'ExecMode', 'ExecOptions', 'ExecRequest', 'ExecResult', 'ExecgateError', 'Gateway',
      'GatewayLogger', 'GatewayOptions', 'KillOptions', 'LoadedPolicy', 'OutputSlice', 'RefKind', 'RefSource', 'RefUse',
      'SandboxPlatformCheck', 'SandboxReport', 'SandboxSettings', 'SourceAnswer', 'StatusOptions', 'WatchPolicyOptions',
      'checkPolicyFile', 'checkSandboxPlatform', 'createGateway', 'getHome', 'isExecgateError', 'loadPolicyFile',
    ]);
  });

  it.each(Object.keys(ENTRIES))('documents every name %s exports (TSDoc that typedoc renders)', (entry) => {
    const undocumented = exportedSymbols(program, ENTRIES[entry]).filter((symbol) => {
      const target = symbol.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(symbol) : symbol;
      return ts.displayPartsToString(target.getDocumentationComment(checker)).trim() === '';
    }).map((symbol) => symbol.getName());
    expect(undocumented).toEqual([]);
  });

  it('loads none of the add-ons, and no heavy module, when execgate is required', () => {
    const script = `
      require(${JSON.stringify(join(ROOT, 'dist', 'index.js'))});
      process.stdout.write(JSON.stringify(Object.keys(require.cache)));`;
    const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
    expect(result.stderr).toBe('');
    const loaded: string[] = JSON.parse(result.stdout);
    const dist = join(ROOT, 'dist');
    const addOns = loaded.filter((file) => /[/\\]dist[/\\](mcp|tools|agent|cli)[/\\]/.test(file.slice(dist.length - 5)));
    const packages = [...new Set(loaded.map((file) => /node_modules[/\\]((?:@[^/\\]+[/\\])?[^/\\]+)/.exec(file)?.[1]).filter(Boolean))];
    expect(addOns).toEqual([]);
    // Everything (re2js, the policy's pattern engine; the MCP SDK, openai, node-pty, the keyring,
    // libsodium, node-forge, pino, undici) loads when a feature first needs it.
    expect(packages).toEqual([]);
  });

  it('loads re2js for a policy file with regex rules, and not for one without', () => {
    const load = (policy: string): string[] => {
      const script = `
        const { loadPolicyFile } = require(${JSON.stringify(join(ROOT, 'dist', 'index.js'))});
        loadPolicyFile(${JSON.stringify(join(ROOT, 'policies', policy))});
        process.stdout.write(JSON.stringify(Object.keys(require.cache)));`;
      const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
      expect(result.stderr).toBe('');
      return (JSON.parse(result.stdout) as string[]).filter((file) => /node_modules[/\\]re2js[/\\]/.test(file));
    };
    expect(load('default.yaml')).toEqual([]);
    // strict.yaml denies `curl ... | sh` and `rm -rf /` by regex.
    expect(load('strict.yaml')).not.toEqual([]);
  });

  describe('a consumer project type-checks', () => {
    const cleanups: Array<() => void> = [];
    afterAll(() => { for (const cleanup of cleanups) cleanup(); });
    const consumer = `
import { createGateway, ExecgateError, type ExecResult, type GatewayOptions } from 'execgate';
import { createMcpServer } from 'execgate/mcp';
import { createDefaultToolRegistry } from 'execgate/tools';
import { Agent } from 'execgate/agent';
import { Redactor } from 'execgate/parts';
const options: GatewayOptions = {};
export async function main(): Promise<string> {
  const gateway = createGateway(options);
  const result: ExecResult = await gateway.exec({ command: 'true' });
  const failure: unknown = new ExecgateError('EXECGATE_ERR_INVALID_OPTION', 'x');
  void [createMcpServer, createDefaultToolRegistry, Agent, Redactor, failure];
  return result.stdout;
}
`;
    const settings: Array<[string, Record<string, unknown>, string]> = [
      ['Node16, CommonJS', { module: 'Node16', moduleResolution: 'Node16' }, 'commonjs'],
      ['NodeNext, ESM', { module: 'NodeNext', moduleResolution: 'NodeNext' }, 'module'],
      ['Bundler', { module: 'ESNext', moduleResolution: 'Bundler' }, 'module'],
    ];
    it.each(settings)('under %s', (_name, compilerOptions, type) => {
      const { dir, cleanup } = makeTempDir('execgate-consumer-');
      cleanups.push(cleanup);
      mkdirSync(join(dir, 'node_modules'));
      symlinkSync(ROOT, join(dir, 'node_modules', 'execgate'), 'dir');
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true, type }));
      writeFileSync(join(dir, 'main.ts'), consumer);
      const parsed = ts.convertCompilerOptionsFromJson({
        ...compilerOptions, target: 'ES2022', strict: true, noEmit: true, skipLibCheck: false, types: ['node'], typeRoots: [join(ROOT, 'node_modules', '@types')],
      }, dir);
      expect(parsed.errors).toEqual([]);
      const consumerProgram = ts.createProgram([join(dir, 'main.ts')], parsed.options);
      // What this test holds is execgate's: the consumer's file and execgate's declarations
      // (checked on their own: the dependencies' declaration files are theirs to keep).
      // (The symlinked package resolves to its real path, the build's dist/.)
      const dist = join(ROOT, 'dist');
      const ours = consumerProgram.getSourceFiles().filter((file) => file.fileName.startsWith(dir) || file.fileName.startsWith(dist));
      expect(ours.map((file) => file.fileName)).toEqual(expect.arrayContaining([join(dir, 'main.ts'), join(dist, 'mcp', 'index.d.ts'), join(dist, 'agent', 'index.d.ts')]));
      const diagnostics = [
        ...consumerProgram.getOptionsDiagnostics(),
        ...consumerProgram.getGlobalDiagnostics(),
        ...ours.flatMap((file) => [...consumerProgram.getSyntacticDiagnostics(file), ...consumerProgram.getSemanticDiagnostics(file)]),
      ].map((diagnostic) => `${diagnostic.file?.fileName ?? ''}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`);
      expect(diagnostics).toEqual([]);
      // execgate's declarations reach only what installs with it: a package the lockfile marks
      // dev-only (TypeBox, in which the policy schema is written) is not there for a consumer.
      // The consumer brings the peer dependencies it uses (openai for execgate/agent), and
      // @types/node (with what it reads) is named by its own settings.
      const theirs = new Set([...Object.keys(PACKAGE.peerDependencies ?? {}), '@types/node', 'undici-types'].map((name) => `node_modules/${name}`));
      const devOnly = consumerProgram.getSourceFiles()
        .filter((file) => !consumerProgram.isSourceFileDefaultLibrary(file))
        .map((file) => /^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//.exec(relative(ROOT, file.fileName).split(sep).join('/'))?.[1])
        .filter((dir): dir is string => dir !== undefined && LOCK.packages[dir]?.dev === true && !theirs.has(dir));
      expect([...new Set(devOnly)]).toEqual([]);
    }, 120_000);
  });
});
