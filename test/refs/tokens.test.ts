import fc from 'fast-check';
import { isExecgateError } from '../../src/errors';
import { REF_ID_PATTERN, isTokenText, isValidRefId, scanTokens } from '../../src/refs/tokens';

function raws(command: string, alias?: boolean): string[] {
  return scanTokens(command, alias === undefined ? {} : { alias }).map((token) => token.raw);
}

describe('isValidRefId / REF_ID_PATTERN', () => {
  test.each(['a', 'A', '0', 'github-token', 'team/prod.db_password', '7f3a9c', 'x'.repeat(128)])('accepts id %#', (id) => {
    expect(isValidRefId(id)).toBe(true);
    expect(REF_ID_PATTERN.test(id)).toBe(true);
  });

  test.each(['', '-a', '.a', '_a', '/a', 'a b', 'a:b', 'a>b', 'ä', 'a\n'])('rejects %j', (id) => {
    expect(isValidRefId(id)).toBe(false);
  });

  test('rejects a 129-character id', () => {
    expect(isValidRefId('a'.repeat(129))).toBe(false);
    expect(REF_ID_PATTERN.test('a'.repeat(129))).toBe(false);
  });

  test('rejects non-strings', () => {
    expect(isValidRefId(42 as unknown as string)).toBe(false);
    expect(isValidRefId(undefined as unknown as string)).toBe(false);
  });
});

describe('scanTokens', () => {
  test('finds canonical tokens with kind, id, raw and offsets', () => {
    const command = 'curl -H "Authorization: <<secret:gh-token>>" <<decrypt:7f3a/b.c_d>>';
    expect(scanTokens(command)).toEqual([
      { kind: 'secret', id: 'gh-token', raw: '<<secret:gh-token>>', start: 24, end: 43, alias: false },
      { kind: 'decrypt', id: '7f3a/b.c_d', raw: '<<decrypt:7f3a/b.c_d>>', start: 45, end: 67, alias: false },
    ]);
    for (const token of scanTokens(command)) expect(command.slice(token.start, token.end)).toBe(token.raw);
  });

  test('finds alias tokens, in position order with canonical ones', () => {
    const tokens = scanTokens('a {{decrypt:x1}} b <<secret:y>> c {{secret:z}}');
    expect(tokens.map((t) => [t.kind, t.id, t.alias])).toEqual([
      ['decrypt', 'x1', true],
      ['secret', 'y', false],
      ['secret', 'z', true],
    ]);
  });

  test('alias: false leaves the {{kind:id}} spelling as plain text', () => {
    expect(raws('{{secret:a}} <<secret:b>>', false)).toEqual(['<<secret:b>>']);
    expect(raws('{{secret:a}} <<secret:b>>', true)).toEqual(['{{secret:a}}', '<<secret:b>>']);
  });

  test.each([
    ['other kind', '<<env:HOME>> <<Secret:a>> {{vault:a}}'],
    ['empty id', '<<secret:>> {{decrypt:}}'],
    ['spaces', '<< secret:a>> <<secret: a>> <<secret:a >> <<secret :a>>'],
    ['unterminated', '<<secret:abc {{secret:abc} <<secret:abc>'],
    ['mixed brackets', '<<secret:a}} {{secret:a>>'],
    ['invalid id', '<<secret:-a>> <<secret:a b>> <<secret:a$b>> <<secret:ä>>'],
    ['129-character id', `<<secret:${'a'.repeat(129)}>>`],
    ['heredoc syntax', 'cat <<EOF\nx\nEOF\ncat <<-"END"\nEND'],
    ['no colon', '<<secret>> {{decrypt}}'],
  ])('treats %s as plain text', (_name, command) => {
    expect(scanTokens(command)).toEqual([]);
  });

  test('accepts a 128-character id', () => {
    expect(raws(`<<secret:${'b'.repeat(128)}>>`)).toHaveLength(1);
  });

  test('a token is exactly the match: extra < in front are plain text, the token is the last valid position', () => {
    // `<<<<secret:x>>`: matching at offsets 0 and 1 fails, so the token starts at offset 2.
    expect(scanTokens('<<<<secret:x>>').map((t) => [t.start, t.raw])).toEqual([[2, '<<secret:x>>']]);
    expect(scanTokens('cat <<<secret:x>>').map((t) => t.start)).toEqual([5]);
    expect(scanTokens('cat <<<<<secret:x>>').map((t) => t.start)).toEqual([7]);
    expect(raws('<<secret:x>>>')).toEqual(['<<secret:x>>']);
    expect(scanTokens('{{{secret:x}}}').map((t) => [t.start, t.raw])).toEqual([[1, '{{secret:x}}']]);
  });

  test('a broken token before a good one does not hide it', () => {
    expect(scanTokens('<<secret:a<<secret:b>>').map((t) => [t.start, t.id])).toEqual([[10, 'b']]);
    expect(raws('{{secret:<<secret:x>>}}')).toEqual(['<<secret:x>>']);
  });

  test('adjacent tokens are separate and non-overlapping', () => {
    expect(raws('<<secret:a>><<secret:b>>{{decrypt:c}}')).toEqual(['<<secret:a>>', '<<secret:b>>', '{{decrypt:c}}']);
  });

  test('returns frozen tokens and an empty list for text without tokens', () => {
    expect(scanTokens('')).toEqual([]);
    expect(Object.isFrozen(scanTokens('<<secret:a>>')[0])).toBe(true);
  });

  test('validates its arguments with coded errors', () => {
    const codeOf = (run: () => unknown): string | undefined => {
      try {
        run();
      } catch (error) {
        return isExecgateError(error) ? error.code : 'not coded';
      }
      return undefined;
    };
    expect(codeOf(() => scanTokens(7 as unknown as string))).toBe('EXECGATE_ERR_INVALID_COMMAND');
    expect(codeOf(() => scanTokens('x', { alias: 'yes' as unknown as boolean }))).toBe('EXECGATE_ERR_INVALID_OPTION');
    expect(codeOf(() => scanTokens('x', null as unknown as object))).toBe('EXECGATE_ERR_INVALID_OPTION');
  });

  test('isTokenText recognises exactly one whole token', () => {
    expect(isTokenText('<<secret:a>>')).toBe(true);
    expect(isTokenText('{{decrypt:a}}')).toBe(true);
    expect(isTokenText(' <<secret:a>>')).toBe(false);
    expect(isTokenText('<<secret:a>><<secret:b>>')).toBe(false);
  });

  test('property: tokens embedded in filler text are found exactly, at their offsets', () => {
    const id = fc.stringMatching(/^[A-Za-z0-9][A-Za-z0-9._/-]{0,20}$/);
    const token = fc.record({ kind: fc.constantFrom('secret', 'decrypt'), id, alias: fc.boolean() });
    // Filler can hold `<`, `{`, `:` and letters but never `>` or `}`, so it cannot complete a token.
    const filler = fc.string({ unit: fc.constantFrom('a', ' ', '<', '{', ':', 's', '$', '"', "'", '\n'), maxLength: 8 });
    fc.assert(
      fc.property(fc.array(fc.tuple(filler, token), { maxLength: 6 }), filler, (parts, tail) => {
        let command = '';
        const expected: Array<{ raw: string; start: number }> = [];
        for (const [text, t] of parts) {
          command += text + ' ';
          const raw = t.alias ? `{{${t.kind}:${t.id}}}` : `<<${t.kind}:${t.id}>>`;
          expected.push({ raw, start: command.length });
          command += raw;
        }
        command += ' ' + tail;
        const found = scanTokens(command).map((t) => ({ raw: t.raw, start: t.start }));
        expect(found).toEqual(expected);
      }),
      { numRuns: 300 },
    );
  });
});
