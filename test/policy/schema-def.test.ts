/*
 * The TypeBox definition (src/policy/schema-def.ts) says exactly what the hand-written
 * policies/schema.json says: the same JSON Schema, keyword for keyword, once key order is set
 * aside (and TypeBox's symbol-keyed markers, which JSON drops).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PolicySchema, getPolicyJsonSchema } from '../../src/policy/schema-def';
import { POLICIES } from './helpers';

function sortKeys(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(sortKeys);
  if (value === null || typeof value !== 'object') return value;
  return Object.fromEntries(Object.keys(value).sort().map((key) => [key, sortKeys((value as Record<string, unknown>)[key])]));
}

const handWritten = JSON.parse(readFileSync(join(POLICIES, 'schema.json'), 'utf8')) as unknown;

test('the definition emits the hand-written schema', () => {
  expect(sortKeys(JSON.parse(JSON.stringify(PolicySchema)))).toEqual(sortKeys(handWritten));
});

/** The key order of every `properties`, `$defs` and `dependentRequired` mapping, by JSON pointer. */
function nameOrders(node: unknown, path = '#', found: Record<string, string[]> = {}): Record<string, string[]> {
  if (node === null || typeof node !== 'object') return found;
  for (const [key, value] of Object.entries(node)) {
    if (!Array.isArray(node) && ['properties', '$defs', 'dependentRequired'].includes(key)) found[`${path}/${key}`] = Object.keys(value as object);
    nameOrders(value, `${path}/${key}`, found);
  }
  return found;
}

test('the emitted schema keeps the order of properties and definitions', () => {
  const emitted = getPolicyJsonSchema();
  expect(sortKeys(emitted)).toEqual(sortKeys(handWritten));
  expect(nameOrders(emitted)).toEqual(nameOrders(handWritten));
});
