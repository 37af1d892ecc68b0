import fc from 'fast-check';
import { HAZARD_CATEGORIES, isHazardName, isHazardValue, isSecretName, isSecretValue, sanitizeEnv } from '../../src/env';
import { BASE_ALLOWLIST } from '../../src/env/sanitize';
import { isExecgateSecretName, SECRET_WORDS } from '../../src/env/secrets';

const hazardNames = HAZARD_CATEGORIES.flatMap((entry) => entry.names);
const credentialValues = [
  `ghp_${'aB3dE5gH7jK9'.repeat(3)}`,
  `sk-${'x'.repeat(24)}`,
  `AKIA${'ABCDEFGHIJKLMNOP'}`,
  'https://u:p@host.example',
  '-----BEGIN EC PRIVATE KEY-----',
  '() { :; }',
];

const nameArb = fc.oneof(
  fc.constantFrom(...hazardNames).chain((name) =>
    name.endsWith('*') ? fc.string({ maxLength: 6 }).map((suffix) => name.slice(0, -1) + suffix) : fc.constant(name),
  ),
  fc
    .tuple(fc.constantFrom(...SECRET_WORDS), fc.constantFrom('', 'MY_', 'my.', 'x-', 'A'), fc.constantFrom('', '_ID', 'S', 'board'))
    .map(([word, prefix, suffix]) => prefix + word + suffix),
  fc.constantFrom('PATH', 'HOME', 'PWD', 'TZ', 'LC_ALL', 'TERM', 'EXECGATE_SECRET_X', 'HTTPS_PROXY', 'npm_config_x', 'XDG_SESSION_ID', '__proto__'),
  fc.string({ minLength: 0, maxLength: 12 }),
  fc.stringMatching(/^[A-Za-z_][A-Za-z0-9_]{0,15}$/),
);

const valueArb = fc.oneof(
  fc.string({ maxLength: 40 }),
  fc.constantFrom(...credentialValues),
  fc.tuple(fc.string({ maxLength: 5 }), fc.constantFrom(...credentialValues)).map(([a, b]) => a + b),
);

function envArb(): fc.Arbitrary<Record<string, string>> {
  return fc.array(fc.tuple(nameArb, valueArb), { maxLength: 20 }).map((entries) => {
    const env: Record<string, string> = Object.create(null);
    for (const [name, value] of entries) env[name] = value;
    return env;
  });
}

const allowArb = fc.array(
  fc.oneof(fc.constantFrom('*', 'MY_*', 'EXECGATE_SECRET_*', 'PATH'), nameArb.filter((name) => name !== '')),
  { maxLength: 3 },
);

function isAllowed(name: string, allow: readonly string[]): boolean {
  return allow.some((entry) => (entry.endsWith('*') ? name.startsWith(entry.slice(0, -1)) : name === entry));
}

const modeArb = fc.constantFrom<'inherit' | 'allowlist'>('inherit', 'allowlist');

const isValid = (name: string, value: string): boolean => name !== '' && !/[=\0]/.test(name) && !value.includes('\0');

test('no hazard or unreleased secret gets out, and removed / withheld / kept partition the input', () => {
  fc.assert(
    fc.property(envArb(), envArb(), allowArb, fc.boolean(), fc.boolean(), modeArb, (inherited, requested, allowSecrets, replace, pty, mode) => {
      const options = { inherited, requested, allowSecrets, replace, pty, mode };
      const snapshot = JSON.stringify([Object.entries(inherited), Object.entries(requested)]);
      const result = sanitizeEnv(options);
      expect(JSON.stringify([Object.entries(inherited), Object.entries(requested)])).toBe(snapshot);
      expect(sanitizeEnv(options)).toEqual(result);

      // The inherited `_` is never copied (the gateway's own program path); a requested one is judged as any other.
      const base = Object.entries(inherited).filter(([name]) => name !== '_' && (mode === 'inherit' || isAllowed(name, BASE_ALLOWLIST)));
      const input = new Map<string, string>(replace ? [] : base);
      for (const [name, value] of Object.entries(requested)) input.set(name, value);
      const forced = new Set(pty ? ['TERM'] : ['PAGER', 'GIT_PAGER', 'GIT_EDITOR', 'EDITOR']);
      const removed = new Set(result.removed);
      const withheld = new Set(result.withheld);

      for (const list of [result.removed, result.withheld, result.reported]) {
        expect(list).toEqual([...new Set(list)].sort());
      }

      for (const [name, value] of Object.entries(result.env)) {
        expect(typeof value).toBe('string');
        if (forced.has(name) && input.get(name) !== value) continue;
        expect(input.get(name)).toBe(value);
        expect(isValid(name, value)).toBe(true);
        expect(isHazardName(name)).toBe(false);
        expect(isHazardValue(value)).toBe(false);
        expect(isExecgateSecretName(name)).toBe(false);
        if (isSecretName(name) || isSecretValue(value)) {
          expect(isAllowed(name, allowSecrets)).toBe(true);
          expect(result.passedSecrets).toContainEqual({ name, value });
        }
      }

      for (const [name, value] of input) {
        const kept = !removed.has(name) && !withheld.has(name);
        expect(Number(removed.has(name)) + Number(withheld.has(name)) + Number(kept)).toBe(1);
        if (kept && !forced.has(name)) expect(result.env[name]).toBe(value);
        else if (!forced.has(name)) expect(name in result.env).toBe(false);
        if (!isValid(name, value) || isHazardName(name) || isHazardValue(value)) expect(removed.has(name)).toBe(true);
        if (mode === 'allowlist' && name === 'TZ' && /[/%]/.test(value)) expect(removed.has(name)).toBe(true);
      }
      for (const name of [...removed, ...withheld]) expect(input.has(name)).toBe(true);
      for (const name of Object.keys(result.env)) expect(input.has(name) || forced.has(name)).toBe(true);
      for (const { name } of result.passedSecrets) expect(withheld.has(name) || removed.has(name)).toBe(false);
    }),
    { numRuns: 500 },
  );
});
