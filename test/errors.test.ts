import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ERROR_CATALOG, ExecgateError } from '../src/errors';

const docs = readFileSync(join(__dirname, '..', 'docs', 'errors.md'), 'utf8');
const documented = [...docs.matchAll(/^### (EXECGATE_ERR_[A-Z0-9_]+)\s*$/gm)].map((m) => m[1]);

describe('error catalog', () => {
  const codes = Object.keys(ERROR_CATALOG);

  test('every code has the EXECGATE_ERR_ form', () => {
    for (const code of codes) expect(code).toMatch(/^EXECGATE_ERR_[A-Z0-9_]+$/);
  });

  test('every code is documented in docs/errors.md', () => {
    const missing = codes.filter((code) => !documented.includes(code));
    expect(missing).toEqual([]);
  });

  test('docs/errors.md documents no code that does not exist, and none twice', () => {
    expect(documented.filter((code) => !codes.includes(code))).toEqual([]);
    expect(new Set(documented).size).toBe(documented.length);
  });

  test('every documented code has a paragraph that says what to do', () => {
    for (const code of codes) {
      const section = docs.split(`### ${code}\n`)[1]?.split(/\n### /)[0] ?? '';
      expect(section.trim().length).toBeGreaterThan(40);
    }
  });

  test('ExecgateError carries code, message, frozen details and a one-line form', () => {
    const error = new ExecgateError('EXECGATE_ERR_CWD_NOT_FOUND', 'The working directory `/nope` does not exist.', { cwd: '/nope' });
    expect(error).toBeInstanceOf(Error);
    expect(error.code).toBe('EXECGATE_ERR_CWD_NOT_FOUND');
    expect(error.toLine()).toBe('EXECGATE_ERR_CWD_NOT_FOUND: The working directory `/nope` does not exist.');
    expect(Object.isFrozen(error.details)).toBe(true);
    expect(JSON.parse(JSON.stringify(error))).toMatchObject({ code: 'EXECGATE_ERR_CWD_NOT_FOUND' });
  });
});
