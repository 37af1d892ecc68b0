/*
 * Reading one policy file into a parsed document that still knows where every value came from.
 *
 * Files are refused before parsing when they are too large, not text, or not UTF-8: a policy is
 * a small hand-edited file, and a parser fed a multi-megabyte or binary file only produces
 * confusing errors (or spends the start-up budget). YAML and JSON are read by the same YAML 1.2
 * parser (core schema, no custom tags, unique keys, a bound on aliases); a `.json` file must also
 * be strict JSON. `yaml` is loaded on first use, so a gateway without a policy file never loads it.
 */
import { closeSync, fstatSync, readSync } from 'node:fs';
import { openRegularFileSync } from '../fs/special';
import { isExecgateError } from '../errors';
import { extname } from 'node:path';
import type { Document, LineCounter, Node as YamlNode } from 'yaml';
import { createHash } from 'node:crypto';
import { formatPath, type PathSegment, type PolicyErrorCode, type PolicyProblem } from './problems';

/** A policy file may be at most this many bytes. */
export const MAX_POLICY_BYTES = 1024 * 1024;

export interface PolicySource {
  /** The name shown in messages. */
  readonly file: string;
  readonly absolute: string;
  readonly text: string;
  readonly digest: string;
  readonly document: Document.Parsed;
  readonly lines: LineCounter;
  readonly value: unknown;
}

export type ReadResult = { readonly source: PolicySource; readonly problems?: undefined } | { readonly source?: undefined; readonly problems: PolicyProblem[] };

type YamlModule = typeof import('yaml');
let yamlModule: YamlModule | undefined;

export function getYaml(): YamlModule {
  yamlModule ??= require('yaml') as YamlModule;
  return yamlModule;
}

function problem(code: PolicyErrorCode, file: string, line: number, column: number, message: string, path?: string): PolicyProblem {
  return path === undefined ? { code, file, line, column, message } : { code, file, line, column, path, message };
}

export function readPolicySource(file: string, absolute: string): ReadResult {
  let bytes: Buffer;
  try {
    bytes = readBounded(absolute);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'TOO_LARGE') {
      const size = (error as Error & { size: number }).size;
      return {
        problems: [problem('EXECGATE_ERR_POLICY_TOO_LARGE', file, 1, 1, `the file is ${size} bytes; a policy file may be at most ${MAX_POLICY_BYTES} bytes (1 MiB). Is this the right file?`)],
      };
    }
    if (code === 'SPECIAL') {
      return { problems: [problem('EXECGATE_ERR_POLICY_NOT_FOUND', file, 1, 1, `cannot read the policy file: it is ${String((error as Error & { kind: string }).kind)}, not a regular file`)] };
    }
    const why = code === 'ENOENT' || code === 'ENOTDIR' ? 'no such file' : code === 'EISDIR' || code === 'NOT_FILE' ? 'not a regular file' : code === 'EACCES' ? 'permission denied' : (code ?? String(error));
    return { problems: [problem('EXECGATE_ERR_POLICY_NOT_FOUND', file, 1, 1, `cannot read the policy file: ${why}`)] };
  }
  const digest = createHash('sha256').update(bytes).digest('hex');

  const nul = bytes.indexOf(0);
  if (nul !== -1) {
    const at = positionOf(bytes.subarray(0, nul).toString('utf8'), nul === 0 ? 0 : Infinity);
    return { problems: [problem('EXECGATE_ERR_POLICY_INVALID', file, at.line, at.column, 'the file holds a NUL byte: it is binary, not a YAML or JSON text file')] };
  }
  let text = bytes.toString('utf8');
  if (!Buffer.from(text, 'utf8').equals(bytes)) {
    const bad = firstInvalidUtf8(bytes);
    return { problems: [problem('EXECGATE_ERR_POLICY_INVALID', file, bad.line, bad.column, 'the file is not valid UTF-8 text (binary data or another encoding); save it as UTF-8')] };
  }
  if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);

  const isJson = extname(absolute).toLowerCase() === '.json';
  if (isJson && text.trim() !== '') {
    try {
      JSON.parse(text);
    } catch (error) {
      const message = (error as Error).message;
      const offset = /at position (\d+)/.exec(message);
      const at = positionOf(text, offset ? Number(offset[1]) : findJsonErrorOffset(text));
      const reason = message.replace(/, ".*$/s, '').replace(/ in JSON at position \d+.*$/s, '');
      return { problems: [problem('EXECGATE_ERR_POLICY_INVALID', file, at.line, at.column, `invalid JSON: ${reason}`)] };
    }
  }

  const { LineCounter, parseDocument } = getYaml();
  const lines = new LineCounter();
  const document = parseDocument(text, {
    lineCounter: lines,
    prettyErrors: false,
    uniqueKeys: true,
    strict: true,
    version: '1.2',
    schema: 'core',
    merge: false,
    intAsBigInt: false,
  });
  const issues = [...document.errors, ...document.warnings];
  if (issues.length > 0) {
    return {
      problems: issues.map((issue) => {
        const offset = issue.pos[0];
        const at = lines.linePos(offset);
        if (issue.code === 'DUPLICATE_KEY') {
          const key = readKeyAt(text, issue.pos[0]);
          const path = pathAtOffset(document, offset);
          return problem('EXECGATE_ERR_POLICY_INVALID', file, at.line, at.col, `duplicate key \`${key}\`: a key may appear only once in a mapping`, formatPath([...path, key]));
        }
        if (issue.code === 'MULTIPLE_DOCS') {
          return problem('EXECGATE_ERR_POLICY_INVALID', file, at.line, at.col, 'the file holds more than one YAML document (`---`); a policy is one document');
        }
        if (issue.code === 'TAG_RESOLVE_FAILED') {
          return problem('EXECGATE_ERR_POLICY_INVALID', file, at.line, at.col, `YAML tags are not supported in a policy: ${issue.message}`);
        }
        return problem('EXECGATE_ERR_POLICY_INVALID', file, at.line, at.col, `${isJson ? 'JSON' : 'YAML'} syntax error: ${issue.message.split('\n')[0]}`);
      }),
    };
  }
  if (document.contents === null || text.trim() === '') {
    return { problems: [problem('EXECGATE_ERR_POLICY_INVALID', file, 1, 1, 'the file is empty; a policy needs at least `version: 1`')] };
  }
  let value: unknown;
  try {
    value = document.toJS({ maxAliasCount: 100 });
  } catch (error) {
    const at = lines.linePos(document.contents.range?.[0] ?? 0);
    return { problems: [problem('EXECGATE_ERR_POLICY_INVALID', file, at.line, at.col, `the document cannot be read: ${(error as Error).message}`)] };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    const at = lines.linePos(document.contents.range?.[0] ?? 0);
    const got = Array.isArray(value) ? 'a list' : value === null ? 'nothing' : `a ${typeof value}`;
    return { problems: [problem('EXECGATE_ERR_POLICY_INVALID', file, at.line, at.col, `expected a mapping of policy keys at the top level (starting with \`version: 1\`), got ${got}`)] };
  }
  return { source: { file, absolute, text, digest, document, lines, value } };
}

/** The mapping key written at `offset` (quotes removed). */
function readKeyAt(text: string, offset: number): string {
  const match = /^(?:"((?:[^"\\]|\\.)*)"|'((?:[^']|'')*)'|([^:\s,{}[\]]+))/.exec(text.slice(offset, offset + 1024));
  if (!match) return '?';
  if (match[1] !== undefined) {
    try {
      return JSON.parse(`"${match[1]}"`) as string;
    } catch {
      return match[1];
    }
  }
  return match[2] !== undefined ? match[2].replace(/''/g, "'") : (match[3]);
}

/** Read at most MAX_POLICY_BYTES + 1 bytes, so a huge file is refused without reading it whole. */
function readBounded(path: string): Buffer {
  let fd: number;
  try {
    fd = openRegularFileSync(path, 'policy file');
  } catch (error) {
    if (isExecgateError(error)) throw Object.assign(new Error(error.message), { code: 'SPECIAL', kind: error.details.kind });
    throw error;
  }
  try {
    const stats = fstatSync(fd);
    if (!stats.isFile()) throw Object.assign(new Error('not a file'), { code: 'NOT_FILE' });
    if (stats.size > MAX_POLICY_BYTES) throw Object.assign(new Error('too large'), { code: 'TOO_LARGE', size: stats.size });
    const buffer = Buffer.alloc(MAX_POLICY_BYTES + 1);
    let length = 0;
    for (;;) {
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) break;
      length += read;
      if (length > MAX_POLICY_BYTES) throw Object.assign(new Error('too large'), { code: 'TOO_LARGE', size: length });
    }
    return buffer.subarray(0, length);
  } finally {
    closeSync(fd);
  }
}

/** 1-based line and column (in characters) of `offset` in `text`; Infinity = the end. */
export function positionOf(text: string, offset: number): { line: number; column: number } {
  const end = Math.min(offset, text.length);
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < end; i++) {
    if (text.charCodeAt(i) === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: end - lineStart + 1 };
}

function firstInvalidUtf8(bytes: Buffer): { line: number; column: number } {
  // Find the first byte offset where decoding diverges, then count lines in the valid prefix.
  let low = 0;
  let high = bytes.length;
  while (low < high) {
    const mid = (low + high) >> 1;
    const prefix = bytes.subarray(0, mid);
    if (Buffer.from(prefix.toString('utf8'), 'utf8').equals(prefix)) low = mid + 1;
    else high = mid;
  }
  // `low - 1` bytes decode cleanly; the bad sequence starts at or just before there.
  const valid = bytes.subarray(0, Math.max(0, low - 1)).toString('utf8').replace(/\uFFFD$/, '');
  return positionOf(valid, Infinity);
}

/** Where JSON.parse gave up, when its message has no position: the first unexpected character. */
function findJsonErrorOffset(text: string): number {
  for (let length = 1; length <= text.length; length++) {
    try {
      JSON.parse(text.slice(0, length));
      return Math.min(length, text.length - 1);
    } catch (error) {
      if (!/Unexpected end/.test((error as Error).message)) return length - 1;
    }
  }
  return 0;
}

/** The JSON path of the innermost collection holding `offset`. */
export function pathAtOffset(document: Document.Parsed, offset: number): PathSegment[] {
  const { isMap, isSeq, isScalar } = getYaml();
  const path: PathSegment[] = [];
  let node: YamlNode | null = document.contents;
  for (;;) {
    if (isMap(node)) {
      let next: YamlNode | null = null;
      for (const pair of node.items) {
        const value = pair.value as YamlNode | null;
        if (value && value.range && value.range[0] <= offset && offset < value.range[2] && (isMap(value) || isSeq(value))) {
          path.push(isScalar(pair.key) ? String(pair.key.value) : '?');
          next = value;
          break;
        }
      }
      if (!next) return path;
      node = next;
    } else if (isSeq(node)) {
      let next: YamlNode | null = null;
      node.items.forEach((item, index) => {
        const value = item as YamlNode | null;
        if (!next && value && value.range && value.range[0] <= offset && offset < value.range[2] && (isMap(value) || isSeq(value))) {
          path.push(index);
          next = value;
        }
      });
      if (!next) return path;
      node = next;
    } else {
      return path;
    }
  }
}

export interface Located {
  /** Where the value at the path starts (or its key, when the value is empty). */
  readonly line: number;
  readonly column: number;
}

/**
 * The position of the value at `path`, or of the key `key` inside it. Falls back to the deepest
 * ancestor found, so a problem always has a position.
 */
export function locate(source: PolicySource, path: readonly PathSegment[], key?: string): Located {
  const { isMap, isSeq, isScalar } = getYaml();
  let node: YamlNode | null = source.document.contents;
  let fallback = node?.range?.[0] ?? 0;
  const steps: PathSegment[] = key === undefined ? [...path] : [...path, key];
  for (let i = 0; i < steps.length; i++) {
    const step = steps[i];
    const wantKey = key !== undefined && i === steps.length - 1;
    let found: { keyStart?: number; value: YamlNode | null } | undefined;
    if (isMap(node)) {
      for (const pair of node.items) {
        if (isScalar(pair.key) && String(pair.key.value) === String(step)) {
          found = { keyStart: pair.key.range?.[0], value: pair.value as YamlNode | null };
          break;
        }
      }
    } else if (isSeq(node) && typeof step === 'number') {
      const item = node.items[step] as YamlNode | null | undefined;
      if (item !== undefined) found = { value: item };
    }
    if (!found) break;
    if (wantKey && found.keyStart !== undefined) {
      fallback = found.keyStart;
      break;
    }
    const start = found.value?.range?.[0] ?? found.keyStart;
    if (start !== undefined) fallback = start;
    // An empty value (`key:` with nothing after it) points at its key.
    if (found.value === null || (isScalar(found.value) && found.value.value === null && found.keyStart !== undefined)) {
      if (found.keyStart !== undefined) fallback = found.keyStart;
    }
    node = found.value;
  }
  const at = source.lines.linePos(fallback);
  return { line: at.line, column: at.col };
}
