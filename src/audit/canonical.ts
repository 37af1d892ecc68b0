/*
 * The canonical serialization of an audit record, which is both what the hash covers and what
 * is written: a verifier needs no re-serialization, it authenticates the exact bytes of the line
 * up to the `hash` member (see chain.ts).
 *
 * Canonical form: JSON without whitespace; top-level members in the order `v`, `seq`, `time`,
 * `event`, then every other member sorted by UTF-16 code units, then `prev`; members of nested
 * objects sorted the same way; array order kept; strings and numbers exactly as JSON.stringify
 * writes them (so a JSON.parse round trip reproduces the same text); `undefined` members dropped
 * and non-finite numbers written as `null`, as JSON does. The sealed line appends
 * `,"hash":"<64 hex>"` as the last member.
 */

export const HEAD_KEYS = ['v', 'seq', 'time', 'event'] as const;
export const RESERVED_KEYS: ReadonlySet<string> = new Set(['v', 'seq', 'time', 'event', 'prev', 'hash']);

const MAX_DEPTH = 32;

function compareKeys(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function serializeValue(value: unknown, depth: number, seen: Set<object>): string | undefined {
  if (value === null) return 'null';
  switch (typeof value) {
    case 'string':
      return JSON.stringify(value);
    case 'number':
      return Number.isFinite(value) ? JSON.stringify(value) : 'null';
    case 'boolean':
      return value ? 'true' : 'false';
    case 'bigint':
      return JSON.stringify(value.toString());
    case 'undefined':
    case 'function':
    case 'symbol':
      return undefined;
    default:
      break;
  }
  const object = value as { toJSON?: () => unknown };
  if (typeof object.toJSON === 'function') return serializeValue(object.toJSON(), depth, seen);
  if (depth >= MAX_DEPTH || seen.has(object)) return '"[unserializable]"';
  seen.add(object);
  try {
    if (Array.isArray(object)) {
      return `[${object.map((item) => serializeValue(item, depth + 1, seen) ?? 'null').join(',')}]`;
    }
    if (ArrayBuffer.isView(object)) return '"[binary]"';
    const members: string[] = [];
    for (const key of Object.keys(object).sort(compareKeys)) {
      const text = serializeValue((object as Record<string, unknown>)[key], depth + 1, seen);
      if (text !== undefined) members.push(`${JSON.stringify(key)}:${text}`);
    }
    return `{${members.join(',')}}`;
  } finally {
    seen.delete(object);
  }
}

/** Canonical JSON of a record without its `hash` (the bytes the chain hash covers). */
export function serializeBody(record: Readonly<Record<string, unknown>>): string {
  const seen = new Set<object>();
  const members: string[] = [];
  const add = (key: string): void => {
    const text = serializeValue(record[key], 1, seen);
    if (text !== undefined) members.push(`${JSON.stringify(key)}:${text}`);
  };
  for (const key of HEAD_KEYS) if (Object.hasOwn(record, key)) add(key);
  for (const key of Object.keys(record).sort(compareKeys)) {
    if (!RESERVED_KEYS.has(key)) add(key);
  }
  if (Object.hasOwn(record, 'prev')) add('prev');
  return `{${members.join(',')}}`;
}

/** The line written for a body and its hash (newline included). */
export function sealLine(body: string, hash: string): string {
  return `${body.slice(0, -1)},"hash":"${hash}"}\n`;
}
