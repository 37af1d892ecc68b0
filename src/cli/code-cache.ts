/*
 * The CLI's modules compiled ahead of time. Node 20 compiles every module it loads from source
 * on every start (an `execgate run` loads some 160, compiled in some 30 ms of a start measured in
 * tens); V8 can instead take the bytecode it made before ("code cache"). The build runs the CLI
 * once (scripts/code-cache.js) and keeps what V8 compiled by the end of that run, lazily
 * compiled functions included, in one file next to this one: `code-cache.bin` in dist/cli.
 *
 * The file is part of execgate's code, made by the build like the rest of dist/ and protected
 * like it (sandbox/own-code.ts: no run can write it). Nothing is written at run time: a cache
 * written where a run could write would be code the gateway runs on a run's say.
 *
 * Each entry is found by the SHA-256 of the module's source: V8 itself checks only the source's
 * length and its own version and flags, so a module edited since the build (or a dependency
 * installed in another version) is compiled from source as before, never run from bytecode
 * made for other text. Node's version and architecture must be the build's, or the file is
 * not read at all. Only the CLI installs this (its entry point, main.ts), and not under Node's
 * policy manifests, the inspector or source maps, whose paths through Node's own loader it would
 * skip.
 *
 * `execgate mcp` has a file of its own (code-cache-mcp.bin): its modules are many a run never loads.
 *
 *   file: "EXECGATE-CODE-CACHE-1\n", uint32 LE header length, JSON header, the entries' data.
 */
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import * as vm from 'node:vm';

const MAGIC = 'EXECGATE-CODE-CACHE-1\n';
/** Next to the compiled CLI: the modules of `execgate run` and the other one-shot commands. */
export const CODE_CACHE_FILE = join(__dirname, 'code-cache.bin');
/**
 * The modules of `execgate mcp` (the MCP SDK and its schemas among them): a file of its own, so
 * that a run does not read and index twice the entries it needs.
 */
export const MCP_CODE_CACHE_FILE = join(__dirname, 'code-cache-mcp.bin');

/** The cache file for a command line (the arguments after the script). */
export function getCodeCacheFile(args: readonly string[]): string {
  return args[0] === 'mcp' ? MCP_CODE_CACHE_FILE : CODE_CACHE_FILE;
}

interface Header {
  readonly node: string;
  readonly arch: string;
  /** [source length, SHA-256 of the source (hex), offset after the header, byte length]. */
  readonly entries: ReadonlyArray<readonly [number, string, number, number]>;
}

interface ModuleLike {
  exports: unknown;
  require(id: string): unknown;
}

interface ModuleClass {
  prototype: { _compile: (this: ModuleLike, content: string, filename: string, format?: string) => unknown };
  _resolveFilename(request: string, parent: ModuleLike, isMain: boolean, options?: unknown): string;
  _resolveLookupPaths(request: string, parent: ModuleLike): string[] | null;
  _extensions: unknown;
  _cache: unknown;
}

const Module = require('node:module') as ModuleClass;

const stats = { used: 0, rejected: 0 };
let installed = false;
let recording = false;

/** Modules compiled from the cache, and entries V8 refused (another V8 build or flags), in this process. */
export function getCodeCacheStats(): { readonly used: number; readonly rejected: number } {
  return { ...stats };
}

function hashOf(content: string): string {
  return createHash('sha256').update(content).digest('hex');
}

/** Node's module wrapper; a `#!` line (the CLI's own) becomes a comment of the same length. */
function wrap(content: string): string {
  return `(function (exports, require, module, __filename, __dirname) { ${content.startsWith('#!') ? `//${content.slice(2)}` : content}\n});`;
}

function compile(content: string, filename: string, cachedData?: Buffer): vm.Script {
  const dynamicImport = (vm.constants as unknown as { USE_MAIN_CONTEXT_DEFAULT_LOADER?: symbol } | undefined)?.USE_MAIN_CONTEXT_DEFAULT_LOADER;
  return new vm.Script(wrap(content), {
    filename,
    ...(cachedData ? { cachedData } : {}),
    ...(dynamicImport ? { importModuleDynamically: dynamicImport as never } : {}),
  });
}

/** What Node's own loader gives a module as `require`. */
function makeRequire(module: ModuleLike): NodeJS.Require {
  const require = ((id: string) => module.require(id)) as NodeJS.Require;
  const resolve = ((request: string, options?: unknown) => Module._resolveFilename(request, module, false, options)) as NodeJS.RequireResolve;
  resolve.paths = (request: string) => Module._resolveLookupPaths(request, module);
  require.resolve = resolve;
  require.main = process.mainModule;
  require.extensions = Module._extensions as NodeJS.RequireExtensions;
  require.cache = Module._cache as NodeJS.Dict<NodeJS.Module>;
  return require;
}

function run(script: vm.Script, module: ModuleLike, filename: string): unknown {
  const fn = script.runInThisContext({ displayErrors: true }) as (...args: unknown[]) => unknown;
  return fn.call(module.exports, module.exports, makeRequire(module), module, filename, dirname(filename));
}

/** Node's own paths this loader would step around: policy manifests, the inspector's break on start, source maps. */
function isPlain(): boolean {
  return !/--(experimental-policy|inspect|enable-source-maps)/.test(`${process.execArgv.join(' ')} ${process.env.NODE_OPTIONS ?? ''}`);
}

/** The header and the data that follows it, or undefined for a file that is not one. */
function parseFile(file: string): { header: Header; data: Buffer } | undefined {
  let buffer: Buffer;
  try {
    buffer = readFileSync(file);
  } catch {
    return undefined; // no cache built (a checkout built without it): compiled from source
  }
  if (buffer.length < MAGIC.length + 4 || buffer.toString('latin1', 0, MAGIC.length) !== MAGIC) return undefined;
  const start = MAGIC.length + 4 + buffer.readUInt32LE(MAGIC.length);
  let header: Header;
  try {
    header = JSON.parse(buffer.toString('utf8', MAGIC.length + 4, start)) as Header;
  } catch {
    return undefined;
  }
  if (!Array.isArray(header.entries) || header.entries.some(([, , offset, size]) => start + offset + size > buffer.length)) return undefined;
  return { header, data: buffer.subarray(start) };
}

function readEntries(file: string): Map<number, Map<string, Buffer>> | undefined {
  const parsed = parseFile(file);
  if (!parsed || parsed.header.node !== process.version || parsed.header.arch !== process.arch) return undefined;
  const byLength = new Map<number, Map<string, Buffer>>();
  for (const [sourceLength, hash, offset, size] of parsed.header.entries) {
    let same = byLength.get(sourceLength);
    if (!same) byLength.set(sourceLength, (same = new Map<string, Buffer>()));
    same.set(hash, parsed.data.subarray(offset, offset + size));
  }
  return byLength;
}

function writeFile(out: string, entries: ReadonlyArray<{ length: number; hash: string; data: Buffer }>): void {
  const list: Array<[number, string, number, number]> = [];
  let offset = 0;
  for (const { length, hash, data } of entries) {
    list.push([length, hash, offset, data.length]);
    offset += data.length;
  }
  const header = Buffer.from(JSON.stringify({ node: process.version, arch: process.arch, entries: list } satisfies Header));
  const size = Buffer.alloc(4);
  size.writeUInt32LE(header.length);
  writeFileSync(out, Buffer.concat([Buffer.from(MAGIC, 'latin1'), size, header, ...entries.map((entry) => entry.data)]));
}

/**
 * One file from the files of several recorded runs (each run compiles other functions): per
 * source, the larger bytecode. Files of another Node are left out.
 */
export function mergeCodeCaches(inputs: readonly string[], out: string): number {
  const merged = new Map<string, { length: number; hash: string; data: Buffer }>();
  for (const input of inputs) {
    const parsed = parseFile(input);
    if (!parsed || parsed.header.node !== process.version || parsed.header.arch !== process.arch) continue;
    for (const [length, hash, offset, size] of parsed.header.entries) {
      if ((merged.get(hash)?.data.length ?? -1) >= size) continue;
      merged.set(hash, { length, hash, data: parsed.data.subarray(offset, offset + size) });
    }
  }
  writeFile(out, [...merged.values()]);
  return merged.size;
}

/**
 * Compile the modules loaded from now on from `file` where it has their source's bytecode. The
 * module being compiled when this is called (the CLI's entry) is not affected; a module the file
 * does not know, or whose bytecode V8 refuses, is compiled from source.
 */
export function installCodeCache(file = CODE_CACHE_FILE): void {
  if (installed || recording || !isPlain()) return;
  const byLength = readEntries(file);
  if (!byLength) return;
  installed = true;
  const original = Module.prototype._compile;
  Module.prototype._compile = function compileCached(this: ModuleLike, content: string, filename: string, format?: string): unknown {
    const same = typeof content === 'string' && format !== 'module' ? byLength.get(content.length) : undefined;
    const cachedData = same?.get(hashOf(content));
    if (!cachedData) return original.call(this, content, filename, format);
    const script = compile(content, filename, cachedData);
    if (script.cachedDataRejected === true) stats.rejected += 1;
    else stats.used += 1;
    return run(script, this, filename);
  };
}

/**
 * The build's side (scripts/code-cache.js): compile every module loaded from now on through V8's
 * API, and when the process exits write what V8 compiled for each to `out` (modules whose source
 * has the same hash are kept once, the larger bytecode).
 */
export function recordCodeCache(out: string): void {
  if (installed || recording) return;
  recording = true;
  const scripts = new Map<string, { length: number; script: vm.Script }>();
  const original = Module.prototype._compile;
  Module.prototype._compile = function compileRecorded(this: ModuleLike, content: string, filename: string, format?: string): unknown {
    if (typeof content !== 'string' || format === 'module') return original.call(this, content, filename, format);
    const script = compile(content, filename);
    scripts.set(hashOf(content), { length: content.length, script });
    return run(script, this, filename);
  };
  process.once('exit', () => {
    writeFile(out, [...scripts].map(([hash, { length, script }]) => ({ length, hash, data: script.createCachedData() })));
  });
}
