/*
 * Masking applied to structured data on its way out: every string inside `value` (object members
 * and array items, not keys) passed through `mask`. For what leaves the gateway without being a
 * run's output: audit records and MCP results, which can name a path a run made out of a value
 * (a directory called after a resolved secret).
 */
export function maskStrings<T>(value: T, mask: (text: string) => string): T {
  if (typeof value === 'string') return mask(value) as T;
  if (Array.isArray(value)) return value.map((item: unknown) => maskStrings(item, mask)) as T;
  if (value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype) {
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) out[key] = maskStrings(item, mask);
    return out as T;
  }
  return value;
}
