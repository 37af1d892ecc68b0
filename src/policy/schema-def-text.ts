/*
 * The text of policies/schema.json, emitted from the definition (schema-def.ts) by the build
 * (scripts/postbuild.js), which compiles the validator from the same text.
 */
import { PolicySchema } from './schema-def';

/*
 * Keywords in the order a person reads them: what it is, what it says, then the constraints,
 * then what it contains. Properties and `$defs` keep the order schema-def.ts writes them in (it
 * is the order ajv reports them in, and that of the messages listing known keys).
 */
const KEYWORD_ORDER = [
  '$schema', '$id', '$ref', 'title', 'description', 'type', 'const', 'enum', 'pattern', 'minLength', 'maxLength',
  'minimum', 'maximum', 'minItems', 'maxItems', 'uniqueItems', 'maxProperties', 'additionalProperties', 'required',
  'propertyNames', 'items', 'anyOf', 'properties', 'dependentRequired', 'oneOf', '$defs',
];
/** Keywords whose value maps names (of properties, definitions) to schemas or lists. */
const NAME_MAPS = new Set(['properties', '$defs', 'dependentRequired']);

function orderKeywords(node: unknown, namesHere = false): unknown {
  if (Array.isArray(node)) return node.map((item) => orderKeywords(item));
  if (node === null || typeof node !== 'object') return node;
  const entries = Object.entries(node);
  if (!namesHere) {
    const rank = (key: string): number => {
      const index = KEYWORD_ORDER.indexOf(key);
      if (index === -1) throw new Error(`The policy schema uses \`${key}\`, which has no place in KEYWORD_ORDER (schema-def.ts).`);
      return index;
    };
    entries.sort(([a], [b]) => rank(a) - rank(b));
  }
  return Object.fromEntries(entries.map(([key, value]) => [key, orderKeywords(value, !namesHere && NAME_MAPS.has(key))]));
}

/**
 * The JSON Schema as plain JSON: TypeBox's own markers (symbol keys) dropped, keywords in a
 * fixed order. What policies/schema.json holds and the validator is compiled from.
 */
export function getPolicyJsonSchema(): Record<string, unknown> {
  return orderKeywords(JSON.parse(JSON.stringify(PolicySchema))) as Record<string, unknown>;
}

const LINE_WIDTH = 120;

function inline(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(inline).join(', ')}]`;
  if (value === null || typeof value !== 'object') return JSON.stringify(value);
  const entries = Object.entries(value);
  return entries.length === 0 ? '{}' : `{ ${entries.map(([key, item]) => `${JSON.stringify(key)}: ${inline(item)}`).join(', ')} }`;
}

/* Indented JSON, with a value that fits on its line (a `$ref`, a list of names) kept on it. */
function format(value: unknown, indent: string, lead: number): string {
  const flat = inline(value);
  if (value === null || typeof value !== 'object' || lead + flat.length <= LINE_WIDTH) return flat;
  const inner = `${indent}  `;
  if (Array.isArray(value)) return `[\n${value.map((item) => `${inner}${format(item, inner, inner.length)}`).join(',\n')}\n${indent}]`;
  const lines = Object.entries(value).map(([key, item]) => {
    const head = `${inner}${JSON.stringify(key)}: `;
    return `${head}${format(item, inner, head.length)}`;
  });
  return `{\n${lines.join(',\n')}\n${indent}}`;
}

/** The text of policies/schema.json. */
export function getPolicySchemaText(): string {
  return `${format(getPolicyJsonSchema(), '', 0)}\n`;
}

