/*
 * The CLI's code cache (src/cli/code-cache.ts): the build's file is used by the built CLI for the
 * modules of a run; bytecode is only ever taken for the very source it was made from (V8 checks no
 * more than the source's length, so a module edited to text of the same length is the case that
 * matters); a file made by another Node is not read; and a sandboxed run cannot write the file.
 */
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { checkPlatform } from '../../src/sandbox/detect';
import { makeTempDir } from '../helpers/tmp';
import { execgateSync } from './helpers';

jest.setTimeout(60_000);

const ROOT = resolve(__dirname, '..', '..');
const CODE_CACHE = join(ROOT, 'dist', 'cli', 'code-cache.js');
const CACHE_FILE = join(ROOT, 'dist', 'cli', 'code-cache.bin');

let tmp: ReturnType<typeof makeTempDir>;
beforeEach(() => { tmp = makeTempDir('execgate-code-cache-'); });
afterEach(() => tmp.cleanup());

/** Runs `script` in a fresh node (`CODE_CACHE` is the built module); its stdout, parsed as JSON. */
function node(script: string, args: string[] = []): Record<string, unknown> {
  const result = spawnSync(process.execPath, ['-e', script, CODE_CACHE, ...args], { cwd: tmp.dir, encoding: 'utf8', timeout: 30_000, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: tmp.dir } });
  expect(result.stderr).toBe('');
  expect(result.status).toBe(0);
  return JSON.parse(result.stdout) as Record<string, unknown>;
}

/** Records a cache of `module` (required once) into `out`. */
function record(module: string, out: string): void {
  node('require(process.argv[1]).recordCodeCache(process.argv[2]); require(process.argv[3]); console.log("{}")', [out, module]);
}

/** Installs the cache `file`, requires `module`; what it exports and what the cache did. */
function load(module: string, file: string): { value: unknown; used: number; rejected: number } {
  return node('const c = require(process.argv[1]); c.installCodeCache(process.argv[2]); const value = require(process.argv[3]); console.log(JSON.stringify({ value, ...c.getCodeCacheStats() }))', [file, module]) as { value: unknown; used: number; rejected: number };
}

test('the build made a cache, and the run path\'s modules are compiled from it', () => {
  const result = node([
    'const c = require(process.argv[1]); c.installCodeCache();',
    `require(${JSON.stringify(join(ROOT, 'dist', 'cli', 'commands', 'run.js'))});`,
    'console.log(JSON.stringify(c.getCodeCacheStats()))',
  ].join('\n'));
  expect(result.rejected).toBe(0);
  // The gateway and its modules, the policy, the sandbox: well over a hundred.
  expect(result.used).toBeGreaterThan(100);
});

test('`execgate mcp` has a file of its own, and the server\'s modules (the MCP SDK among them) are compiled from it', () => {
  const result = node([
    'const c = require(process.argv[1]);',
    'const files = [c.getCodeCacheFile(["mcp", "--workdir", "x"]), c.getCodeCacheFile(["run", "--", "mcp"])];',
    'c.installCodeCache(files[0]);',
    `require(${JSON.stringify(join(ROOT, 'dist', 'cli', 'commands', 'mcp.js'))});`,
    `require(${JSON.stringify(join(ROOT, 'dist', 'mcp', 'index.js'))});`,
    'console.log(JSON.stringify({ files, ...c.getCodeCacheStats() }))',
  ].join('\n'));
  expect(result.files).toEqual([join(ROOT, 'dist', 'cli', 'code-cache-mcp.bin'), CACHE_FILE]);
  expect(result.rejected).toBe(0);
  expect(result.used).toBeGreaterThan(300);
});

test('a module whose source changed since the cache was made (same length) runs its new source', () => {
  const module = join(tmp.dir, 'answer.js');
  const cache = join(tmp.dir, 'cache.bin');
  writeFileSync(module, 'module.exports = (function () { return "made-with-the-cache"; })();\n');
  record(module, cache);
  expect(load(module, cache)).toEqual({ value: 'made-with-the-cache', used: 1, rejected: 0 });
  // The same length, other text: V8 alone would accept the bytecode and run the old function.
  writeFileSync(module, 'module.exports = (function () { return "changed-by-an-edit"; })();\n');
  expect(load(module, cache)).toEqual({ value: 'changed-by-an-edit', used: 0, rejected: 0 });
});

test('a cache made by another Node is not read; a file that is not one is ignored', () => {
  const module = join(tmp.dir, 'answer.js');
  const cache = join(tmp.dir, 'cache.bin');
  writeFileSync(module, 'module.exports = 42;\n');
  record(module, cache);
  // The same file, its header saying another Node version.
  const file = readFileSync(cache);
  const magic = 'EXECGATE-CODE-CACHE-1\n'.length;
  const end = magic + 4 + file.readUInt32LE(magic);
  const header = Buffer.from(JSON.stringify({ ...JSON.parse(file.toString('utf8', magic + 4, end)) as object, node: 'v0.0.1' }));
  const size = Buffer.alloc(4);
  size.writeUInt32LE(header.length);
  writeFileSync(cache, Buffer.concat([file.subarray(0, magic), size, header, file.subarray(end)]));
  expect(load(module, cache)).toEqual({ value: 42, used: 0, rejected: 0 });
  writeFileSync(cache, 'not a cache');
  expect(load(module, cache)).toEqual({ value: 42, used: 0, rejected: 0 });
});

(checkPlatform(undefined).ok ? test : test.skip)('a sandboxed run whose writable root holds execgate cannot write or replace the cache', () => {
  const before = createHash('sha256').update(readFileSync(CACHE_FILE)).digest('hex');
  const result = execgateSync(['run', '--cwd', ROOT, '--', [
    'f=dist/cli/code-cache.bin',
    '( printf x >> "$f" ) 2>/dev/null && echo appended',
    '( printf x > "$f.new" && mv "$f.new" "$f" ) 2>/dev/null && echo replaced',
    '( rm -f "$f" ) 2>/dev/null && [ ! -e "$f" ] && echo removed',
    '[ -w "$f" ] && echo writable; echo end',
  ].join('; ')], { cwd: tmp.dir });
  expect(result.stdout).toContain('end');
  expect(result.stdout).not.toMatch(/appended|replaced|removed|writable/);
  expect(createHash('sha256').update(readFileSync(CACHE_FILE)).digest('hex')).toBe(before);
});
