import fc from 'fast-check';
import { compileGlob, createGlobMatcher } from '../../src/tools/files/glob';

const matches = (pattern: string, path: string): boolean => compileGlob(pattern).test(path);

describe('glob matcher', () => {
  test.each([
    ['*.ts', 'a.ts', true],
    ['*.ts', 'dir/a.ts', false],
    ['*', '.hidden', true],
    ['*', 'a/b', false],
    ['**', 'a/b/c', true],
    ['**/*.ts', 'a.ts', true],
    ['**/*.ts', 'a/b/c.ts', true],
    ['src/**/*.ts', 'src/a.ts', true],
    ['src/**/*.ts', 'src/x/y/a.ts', true],
    ['src/**/*.ts', 'lib/a.ts', false],
    ['src/**', 'src', true],
    ['src/**', 'src/a/b', true],
    ['src/**', 'srcx/a', false],
    ['a**b', 'aXYb', true],
    ['a**b', 'a/b', false],
    ['?.md', 'a.md', true],
    ['?.md', 'ab.md', false],
    ['?', '/', false],
    ['[abc].txt', 'b.txt', true],
    ['[abc].txt', 'd.txt', false],
    ['[a-c].txt', 'c.txt', true],
    ['[!a-c].txt', 'd.txt', true],
    ['[^a-c].txt', 'a.txt', false],
    ['[!a]', '/', false],
    ['[]]', ']', true],
    ['[.-0]', '/', false],
    ['x[', 'x[', true],
    ['{a,b}.js', 'a.js', true],
    ['{a,b}.js', 'c.js', false],
    ['{src/**/*.ts,*.md}', 'src/x/y.ts', true],
    ['{src/**/*.ts,*.md}', 'README.md', true],
    ['{a,{b,c}d}', 'cd', true],
    ['{a}', '{a}', true],
    ['{a', '{a', true],
    ['\\*.txt', '*.txt', true],
    ['\\*.txt', 'a.txt', false],
    ['a.b', 'axb', false],
    ['(x)|+$^', '(x)|+$^', true],
  ])('%s vs %s -> %s', (pattern, path, expected) => {
    expect(matches(pattern, path)).toBe(expected);
  });

  test('a glob without / is matched against the last name, one with / against the whole path', () => {
    expect(createGlobMatcher('*.ts')('deep/dir/a.ts')).toBe(true);
    expect(createGlobMatcher('dir/*.ts')('deep/dir/a.ts')).toBe(false);
    expect(createGlobMatcher('**/dir/*.ts')('deep/dir/a.ts')).toBe(true);
  });

  test('empty and NUL patterns are refused', () => {
    expect(() => compileGlob('')).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_SEARCH_PATTERN_INVALID' }));
    expect(() => compileGlob('a\0')).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_SEARCH_PATTERN_INVALID' }));
  });

  test('property: an escaped literal matches exactly itself', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 30 }).filter((s) => !s.includes('\0')), fc.string({ maxLength: 30 }), (literal, other) => {
        const escaped = literal.replace(/[\\*?[\]{}]/g, (c) => `\\${c}`);
        const regex = compileGlob(escaped);
        expect(regex.test(literal)).toBe(true);
        expect(regex.test(other)).toBe(other === literal);
      }),
    );
  });

  test('property: * and ? never match across /', () => {
    fc.assert(
      fc.property(fc.array(fc.stringMatching(/^[a-z.]{1,6}$/), { minLength: 2, maxLength: 5 }), (segments) => {
        const path = segments.join('/');
        expect(matches('*', path)).toBe(false);
        expect(matches(segments.map(() => '*').join('/'), path)).toBe(true);
        expect(matches('**', path)).toBe(true);
      }),
    );
  });

  test('matching stays fast on adversarial input', () => {
    const regex = compileGlob('**/**/**/**/**/*a*a*a*a*a*a*b');
    expect(regex.test(`${'a/'.repeat(30)}${'a'.repeat(2000)}`)).toBe(false);
    expect(regex.test(`${'a/'.repeat(30)}${'a'.repeat(2000)}b`)).toBe(true);
  });

  test('brace expansion is bounded', () => {
    expect(compileGlob('{a,b}{c,d}{e,f}').test('bde')).toBe(true);
    expect(() => compileGlob('{a,b}'.repeat(11))).toThrow(expect.objectContaining({ code: 'EXECGATE_ERR_SEARCH_PATTERN_INVALID' }));
  });

  test('? and classes take whole characters, not UTF-16 halves', () => {
    expect(compileGlob('?.txt').test('😀.txt')).toBe(true);
    expect(compileGlob('[😀x].txt').test('😀.txt')).toBe(true);
  });
});
