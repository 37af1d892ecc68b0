/*
 * Validation against the policy's JSON Schema (policies/schema.json, emitted from the TypeBox
 * definition in schema-def.ts by the build).
 *
 * The validator is compiled ahead of time by the build (scripts/postbuild.js, ajv's standalone
 * code) and loaded on first use, so a gateway given no policy file never pays for it.
 *
 * ajv's errors are then turned into one precise problem per mistake: positioned at the offending
 * key or value, naming its JSON path and what was expected, with a suggestion for a misspelled
 * key or value.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describeJson, formatPath, suggest, valueAt, type PathSegment, type PolicyProblem } from './problems';
import { locate, type PolicySource } from './source';

export const SCHEMA_PATH = join(__dirname, '..', '..', 'policies', 'schema.json');

/*
 * The generated validator lives in the build output only (generated code stays out of src/ and
 * out of git), and is found through the package root: from dist/policy/ (the package) this is
 * the file beside this one; from src/policy/ (the tests, run through ts-jest after `npm run
 * build`) it is the same file, so the tests check the very validator that ships.
 */
export const VALIDATOR_PATH = join(__dirname, '..', '..', 'dist', 'policy', 'schema-validator.js');

interface SchemaError {
  readonly instancePath: string;
  readonly schemaPath: string;
  readonly keyword: string;
  readonly params: Record<string, unknown>;
  readonly message?: string;
  readonly propertyName?: string;
}

type Validate = ((data: unknown) => boolean) & { errors?: SchemaError[] | null };
type Schema = Record<string, unknown>;

let schemaText: string | undefined;
let schema: Schema | undefined;
let validator: Validate | undefined;

export function getSchemaText(): string {
  schemaText ??= readFileSync(SCHEMA_PATH, 'utf8');
  return schemaText;
}

export function getSchema(): Schema {
  schema ??= JSON.parse(getSchemaText()) as Schema;
  return schema;
}

function getValidator(): Validate {
  if (validator) return validator;
  if (!existsSync(VALIDATOR_PATH)) throw new Error(`The policy validator ${VALIDATOR_PATH} is missing; \`npm run build\` generates it.`);
  validator = require(VALIDATOR_PATH) as Validate;
  return validator;
}

/** Every schema problem of one parsed file (empty when it is valid). */
export function validateSource(source: PolicySource): PolicyProblem[] {
  const validate = getValidator();
  if (validate(source.value)) return [];
  // A mapping without `version` is not a policy (a file named by mistake, `extends: /etc/shadow`):
  // one problem, and nothing of its content (its keys could be anything) goes into a message.
  if (source.value !== null && typeof source.value === 'object' && !Array.isArray(source.value) && !Object.hasOwn(source.value, 'version')) {
    return [{ code: 'EXECGATE_ERR_POLICY_INVALID', file: source.file, line: 1, column: 1, message: 'missing `version`; a policy starts with `version: 1` (this file is not read as a policy, and nothing of it is shown)' }];
  }
  const errors = reduceErrors(validate.errors ?? [], source.value);
  const problems: PolicyProblem[] = [];
  const seen = new Set<string>();
  for (const error of errors) {
    const problem = toProblem(error, source);
    const key = `${problem.line}:${problem.column}:${problem.path ?? ''}:${problem.message}`;
    if (seen.has(key)) continue;
    seen.add(key);
    problems.push(problem);
  }
  return problems.sort((a, b) => a.line - b.line || a.column - b.column);
}

function parsePointer(pointer: string): PathSegment[] {
  if (pointer === '') return [];
  return pointer
    .slice(1)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((part) => (/^(0|[1-9][0-9]*)$/.test(part) ? Number(part) : part));
}

function walk(node: unknown, parts: readonly string[]): unknown {
  let current = node;
  for (const part of parts) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<string, unknown>)[part.replace(/~1/g, '/').replace(/~0/g, '~')];
  }
  return current;
}

/**
 * The schemas that apply along an instance location, root first: `$ref`s followed, and at each
 * level the `anyOf` branch the value's type picks (at the location itself too, unless `pickLast`
 * is false). Both the picked and the unpicked schema of a level are listed.
 */
function schemasAlong(path: readonly PathSegment[], root: unknown, pickLast: boolean): Schema[] {
  let node = resolveRef(getSchema());
  let value = root;
  const chain: Schema[] = [node];
  for (const segment of path) {
    const child = value !== null && typeof value === 'object' ? (value as Record<string | number, unknown>)[segment] : undefined;
    node = pickBranch(node, value);
    chain.push(node);
    const next = typeof segment === 'number'
      ? node.items
      : ((node.properties as Record<string, unknown> | undefined)?.[segment] ?? (typeof node.additionalProperties === 'object' ? node.additionalProperties : undefined));
    if (next === undefined) return chain;
    node = resolveRef(next as Schema);
    value = child;
    chain.push(node);
  }
  if (pickLast) chain.push(pickBranch(node, value));
  return chain;
}

function pickBranch(node: Schema, value: unknown): Schema {
  const branches = (node.anyOf ?? node.oneOf) as Schema[] | undefined;
  if (!branches || node.properties || node.items) return node;
  const valueType = jsonType(value);
  const match = branches.map(resolveRef).find((branch) => typeMatches(branch.type, valueType));
  return match ?? node;
}

/*
 * The schema object an error's keyword belongs to. ajv gives schemaPath from the root of the
 * schema function that raised it: the root schema, or a `$defs` entry compiled on its own (then
 * `#/additionalProperties` means that entry's). The instance location says which.
 */
function parentSchemaOf(error: SchemaError, root: unknown): Schema {
  const parts = error.schemaPath.replace(/^#/, '').split('/').slice(1);
  const parentParts = parts.slice(0, -1);
  const keyword = parts[parts.length - 1];
  // For anyOf/oneOf the keyword sits on the schema itself, before a branch is picked.
  const picked = error.keyword !== 'anyOf' && error.keyword !== 'oneOf';
  const chain = schemasAlong(parsePointer(error.instancePath), root, picked);
  for (let i = chain.length - 1; i >= 0; i--) {
    const local = walk(chain[i], parentParts);
    if (local !== null && typeof local === 'object' && keyword in (local)) return local as Schema;
  }
  return (walk(getSchema(), parentParts) ?? {}) as Schema;
}


function resolveRef(node: Schema): Schema {
  let current = node;
  for (let i = 0; i < 8 && typeof current.$ref === 'string'; i++) {
    const ref = current.$ref;
    const parts = ref.replace(/^#/, '').split('/').slice(1);
    let next: unknown = getSchema();
    for (const part of parts) next = (next as Record<string, unknown>)?.[part];
    current = (next ?? {}) as Schema;
  }
  return current;
}

function jsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'array';
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number';
  return typeof value;
}

function typeMatches(schemaType: unknown, valueType: string): boolean {
  const types = Array.isArray(schemaType) ? schemaType : [schemaType];
  return types.some((type) => type === valueType || (type === 'number' && valueType === 'integer'));
}

/*
 * ajv reports every failed branch of an `anyOf`. Keep what a person needs: when the value's type
 * picks one branch (a list where "a string or a list" is allowed), the errors inside that branch;
 * otherwise one "expected <title>" error for the whole `anyOf`.
 */
function reduceErrors(errors: readonly SchemaError[], root: unknown): SchemaError[] {
  // A bad key is reported by the error inside `propertyNames`, which says what was expected.
  let kept = errors.filter((error) => !(error.keyword === 'propertyNames' && errors.some((other) => other.propertyName === error.params.propertyName && other !== error)));
  for (const error of errors) {
    if (error.keyword !== 'anyOf' && error.keyword !== 'oneOf') continue;
    const branches = (parentSchemaOf(error, root)[error.keyword] ?? []) as Schema[];
    const value = valueAt(root, parsePointer(error.instancePath));
    if (error.keyword === 'oneOf' && branches.every((branch) => Array.isArray(branch.required))) {
      // "exactly one of these keys": the failed `required` branches say nothing useful.
      kept = kept.filter((other) => !(other.keyword === 'required' && other.instancePath === error.instancePath && /\/oneOf\/\d+\/required$/.test(other.schemaPath)));
      continue;
    }
    const valueType = jsonType(value);
    const matching = branches.map(resolveRef).filter((branch) => typeMatches(branch.type, valueType));
    const structured = matching.length === 1 && (valueType === 'array' || valueType === 'object');
    if (structured) {
      kept = kept.filter((other) => other !== error && !(other.instancePath === error.instancePath && other.keyword === 'type'));
    } else {
      kept = kept.filter((other) => other === error || !(other.instancePath === error.instancePath || other.instancePath.startsWith(`${error.instancePath}/`)));
    }
  }
  return kept;
}

const TYPE_WORDS: Readonly<Record<string, string>> = {
  integer: 'a whole number',
  number: 'a number',
  string: 'a string',
  boolean: '`true` or `false`',
  array: 'a list',
  object: 'a mapping',
  null: 'nothing',
};

function expected(parent: Schema, fallback: string): string {
  return typeof parent.title === 'string' ? parent.title : fallback;
}

/** The source text range of the scalar at `path` (to quote what the author wrote, `yes` rather than `true`). */
function sourceRange(source: PolicySource, path: readonly PathSegment[]): [number, number] {
  const node = source.document.getIn(path, true) as { range?: [number, number, number] } | undefined;
  return node?.range ? [node.range[0], node.range[1]] : [0, 0];
}

function toProblem(error: SchemaError, source: PolicySource): PolicyProblem {
  const path = parsePointer(error.instancePath);
  const value = valueAt(source.value, path);
  const parent = parentSchemaOf(error, source.value);
  const make = (message: string, at: readonly PathSegment[] = path, key?: string): PolicyProblem => {
    const where = locate(source, at, key);
    const fullPath = key === undefined ? at : [...at, key];
    return {
      code: 'EXECGATE_ERR_POLICY_INVALID',
      file: source.file,
      line: where.line,
      column: where.column,
      ...(fullPath.length > 0 ? { path: formatPath(fullPath) } : {}),
      message,
    };
  };

  if (error.propertyName !== undefined && error.keyword !== 'propertyNames') {
    return make(`invalid key \`${error.propertyName}\`: expected ${expected(parent, 'a valid key')}`, path, error.propertyName);
  }
  switch (error.keyword) {
    case 'additionalProperties': {
      const key = String(error.params.additionalProperty);
      const known = Object.keys((parent.properties ?? {})).filter((name) => name !== '$schema');
      const hint = suggest(key, known);
      const tail = hint ? `did you mean \`${hint}\`?` : `expected one of ${known.map((name) => `\`${name}\``).join(', ')}`;
      return make(`unknown key; ${tail}`, path, key);
    }
    case 'required': {
      const missing = String(error.params.missingProperty);
      if (path.length === 0 && missing === 'version') return make('missing `version`; a policy starts with `version: 1`');
      return make(`missing required key \`${missing}\``);
    }
    case 'const':
      if (path.length === 1 && path[0] === 'version') {
        return make(`this execgate reads policy format version 1, got ${describeJson(value)}; check which execgate release the file was written for`);
      }
      return make(`expected \`${JSON.stringify(error.params.allowedValue)}\`, got ${describeJson(value)}`);
    case 'enum': {
      const allowed = (error.params.allowedValues as unknown[]).map(String);
      const hint = typeof value === 'string' ? suggest(value, allowed) : undefined;
      return make(`expected one of ${allowed.map((v) => `\`${v}\``).join(', ')}, got ${describeJson(value)}${hint ? `; did you mean \`${hint}\`?` : ''}`);
    }
    case 'type': {
      // YAML reads `true`, `no`, `1.0`, `~` as non-strings; a person writing a word meant text.
      const quote = error.params.type === 'string' && (typeof value === 'boolean' || typeof value === 'number' || value === null)
        ? `; put it in quotes (\`"${String(source.text.slice(...sourceRange(source, path)) || value)}"\`) to mean the text`
        : '';
      return make(`expected ${expected(parent, TYPE_WORDS[String(error.params.type)] ?? String(error.params.type))}, got ${describeJson(value)}${quote}`);
    }
    case 'anyOf':
      return make(`expected ${expected(parent, 'a value of another form')}, got ${describeJson(value)}`);
    case 'oneOf': {
      const branches = (parent.oneOf ?? []) as Schema[];
      const keys = branches.flatMap((branch) => (Array.isArray(branch.required) ? (branch.required as string[]) : []));
      if (keys.length === branches.length) {
        const present = keys.filter((key) => value !== null && typeof value === 'object' && key in (value));
        const list = keys.map((key) => `\`${key}\``).join(', ');
        return present.length === 0 ? make(`give one of ${list}: what the entry matches`) : make(`give only one of ${list}, not ${present.map((key) => `\`${key}\``).join(' and ')}`);
      }
      return make(`expected ${expected(parent, 'exactly one of the allowed forms')}, got ${describeJson(value)}`);
    }
    case 'pattern':
      return make(`expected ${expected(parent, `text matching \`${String(error.params.pattern)}\``)}, got ${describeJson(value)}`);
    case 'minimum':
    case 'exclusiveMinimum':
    case 'maximum':
    case 'exclusiveMaximum': {
      const word = { minimum: 'at least', exclusiveMinimum: 'more than', maximum: 'at most', exclusiveMaximum: 'less than' }[error.keyword];
      return make(`expected ${word} ${String(error.params.limit)}, got ${describeJson(value)}`);
    }
    case 'minLength':
      return make(error.params.limit === 1 ? 'must not be empty' : `expected at least ${String(error.params.limit)} characters`);
    case 'maxLength':
      return make(`expected at most ${String(error.params.limit)} characters, got ${(value as string).length}`);
    case 'minItems':
      return make(`expected at least ${String(error.params.limit)} ${error.params.limit === 1 ? 'entry' : 'entries'}, got an empty list`);
    case 'maxItems':
      return make(`expected at most ${String(error.params.limit)} entries`);
    case 'maxProperties':
      return make(`expected at most ${String(error.params.limit)} keys`);
    case 'uniqueItems':
      return make(`entries ${String(error.params.j)} and ${String(error.params.i)} are the same; list each value once`, [...path, Number(error.params.i)]);
    case 'propertyNames':
      return make(`invalid key \`${String(error.params.propertyName)}\``, path, String(error.params.propertyName));
    default:
      return make(error.message ?? `invalid (${error.keyword})`);
  }
}
