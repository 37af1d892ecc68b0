import fc from 'fast-check';
import { X509Certificate } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import { Readable } from 'node:stream';
import { ExecgateError } from '../../src/errors';
import { getAddressRefusal, resolveAllowed, systemResolver } from '../../src/egress/address';
import { createEgressCa } from '../../src/egress/ca';
import { matchesHost, parseHostPattern } from '../../src/egress/hosts';
import { getSwaps, swapHeaderValue, SwapStream } from '../../src/egress/inject';
import { checkEgress, createInjections } from '../../src/egress/plan';
import { decideDestination, normalizeNetworkPolicy, normalizeSecretBindings } from '../../src/egress/rules';
import { createSentinel } from '../../src/egress/sentinel';

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    expect(error).toBeInstanceOf(ExecgateError);
    return (error as ExecgateError).code;
  }
  return undefined;
}

describe('host patterns', () => {
  test.each([
    ['api.github.com', 'name', 'api.github.com', undefined],
    ['API.GitHub.com.', 'name', 'api.github.com', undefined],
    ['*.npmjs.org', 'wildcard', 'npmjs.org', undefined],
    ['*.npmjs.org:443', 'wildcard', 'npmjs.org', 443],
    ['*', 'any', '*', undefined],
    ['*:22', 'any', '*', 22],
    ['192.0.2.10:5432', 'ip', '192.0.2.10', 5432],
    ['[2001:DB8:0:0::1]:443', 'ip', '2001:db8::1', 443],
  ])('%s parses', (text, kind, host, port) => {
    expect(parseHostPattern(text)).toMatchObject({ kind, host, port });
  });

  test.each([
    'https://github.com', 'github.com/path', 'user@github.com', 'api.*.com', '*foo.com', 'foo..com', '-a.com',
    '*.com', 'github.com:0', 'github.com:70000', 'github.com:http', '2001:db8::1', '[not-ipv6]', '', '   ', 'a b.com',
    'x'.repeat(64) + '.com',
  ])('%j is refused with a coded error naming it', (text) => {
    expect(codeOf(() => parseHostPattern(text, 'sandbox.network.allow[0]'))).toBe('EXECGATE_ERR_EGRESS_HOST_PATTERN_INVALID');
  });

  test('non-strings are refused', () => {
    for (const value of [3, null, {}, ['a.com']]) expect(codeOf(() => parseHostPattern(value))).toBe('EXECGATE_ERR_EGRESS_HOST_PATTERN_INVALID');
  });

  test('matching: wildcard covers subdomains only, `*` never covers IP literals, ports restrict', () => {
    const wild = parseHostPattern('*.example.com');
    expect(matchesHost(wild, 'a.example.com', 443)).toBe(true);
    expect(matchesHost(wild, 'a.b.example.com', 80)).toBe(true);
    expect(matchesHost(wild, 'example.com', 443)).toBe(false);
    expect(matchesHost(wild, 'badexample.com', 443)).toBe(false);
    expect(matchesHost(parseHostPattern('*'), '203.0.113.1', 443)).toBe(false);
    expect(matchesHost(parseHostPattern('github.com:443'), 'github.com', 22)).toBe(false);
    expect(matchesHost(parseHostPattern('github.com:443'), 'github.com', 443)).toBe(true);
  });
});

describe('network policy and decisions', () => {
  test('allowlist: only allowed names; deny wins; IP literals only when named', () => {
    const policy = normalizeNetworkPolicy({ mode: 'allowlist', allow: ['*.github.com', '198.51.100.7:443'], deny: ['gist.github.com'] });
    expect(decideDestination(policy, [], 'api.github.com', 443)).toEqual({ allowed: true, rule: 'allow:*.github.com' });
    expect(decideDestination(policy, [], 'gist.github.com', 443)).toEqual({ allowed: false, rule: 'deny:gist.github.com' });
    expect(decideDestination(policy, [], 'example.com', 443)).toEqual({ allowed: false, rule: 'not-allowlisted' });
    expect(decideDestination(policy, [], '198.51.100.7', 443).allowed).toBe(true);
    expect(decideDestination(policy, [], '198.51.100.7', 80).allowed).toBe(false);
  });

  test('open: every name but the denied, IP literals refused unless named; none: nothing', () => {
    const open = normalizeNetworkPolicy({ mode: 'open', deny: ['*.evil.test'] });
    expect(decideDestination(open, [], 'example.com', 443)).toEqual({ allowed: true, rule: 'mode:open' });
    expect(decideDestination(open, [], 'x.evil.test', 443).allowed).toBe(false);
    expect(decideDestination(open, [], '203.0.113.9', 443)).toEqual({ allowed: false, rule: 'ip-literal-not-allowed' });
    expect(decideDestination(open, [], '2001:db8::1', 443).allowed).toBe(false);
    expect(decideDestination(normalizeNetworkPolicy({ mode: 'none' }), [], 'example.com', 443)).toEqual({ allowed: false, rule: 'mode:none' });
  });

  test('an env-delivered bound secret narrows the whole run to its hosts', () => {
    const [binding] = normalizeSecretBindings([{ ref: 'secret:gh', hosts: ['github.com'] }]);
    const open = normalizeNetworkPolicy({ mode: 'open' });
    expect(decideDestination(open, [binding!], 'github.com', 443).allowed).toBe(true);
    expect(decideDestination(open, [binding!], 'attacker.test', 443)).toEqual({ allowed: false, rule: 'bound:secret:gh' });
  });

  test('bad policies: coded errors', () => {
    expect(codeOf(() => normalizeNetworkPolicy({ mode: 'sometimes' }))).toBe('EXECGATE_ERR_POLICY_INVALID');
    expect(codeOf(() => normalizeNetworkPolicy({ mode: 'allowlist', allow: ['http://x.com'] }))).toBe('EXECGATE_ERR_EGRESS_HOST_PATTERN_INVALID');
    expect(codeOf(() => normalizeNetworkPolicy({ mode: 'allowlist', allow: 'x.com' }))).toBe('EXECGATE_ERR_EGRESS_HOST_PATTERN_INVALID');
  });
});

describe('secrets.bind', () => {
  test.each([
    [[{ ref: 'secret:gh', hosts: [] }], /lists no hosts/],
    [[{ ref: 'secret:gh' }], /lists no hosts/],
    [[{ ref: 'gh', hosts: ['github.com'] }], /reference such as/],
    [[{ ref: 'secret:gh', hosts: ['github.com'], delivery: 'smoke-signal' }], /`env` or `inject`/],
    [[{ ref: 'secret:gh', hosts: ['github.com'] }, { ref: 'secret:gh', hosts: ['x.com'] }], /bound twice/],
    ['secret:gh', /to be a list/],
  ])('%j is refused', (input, message) => {
    let caught: unknown;
    try {
      normalizeSecretBindings(input);
    } catch (error) {
      caught = error;
    }
    expect((caught as ExecgateError).code).toBe('EXECGATE_ERR_EGRESS_BIND_INVALID');
    expect((caught as ExecgateError).message).toMatch(message);
  });

  const bindings = normalizeSecretBindings([
    { ref: 'secret:gh', hosts: ['github.com', 'api.github.com'], delivery: 'inject' },
    { ref: 'secret:npm', hosts: ['*.npmjs.org'] },
    { ref: 'secret:other', hosts: ['example.com'] },
  ]);

  test('inject without a sandbox is refused before anything resolves', () => {
    const network = normalizeNetworkPolicy({ mode: 'open' });
    expect(codeOf(() => checkEgress({ network, bindings, refs: ['secret:gh'], sandboxed: false }))).toBe('EXECGATE_ERR_EGRESS_NEEDS_SANDBOX');
    // A request that does not use the bound secret is not affected.
    expect(checkEgress({ network, bindings, refs: ['secret:unbound'], sandboxed: false })).toEqual({ narrowing: [], injected: [] });
  });

  test.each([
    [{ mode: 'none' }, ['secret:gh']],
    [{ mode: 'allowlist', allow: ['gitlab.com'] }, ['secret:gh']],
    [{ mode: 'allowlist', allow: ['gist.github.com', 'github.com.evil.test'] }, ['secret:gh']],
    [{ mode: 'open', deny: ['github.com', '*.github.com'] }, ['secret:gh']],
    [{ mode: 'open' }, ['secret:npm', 'secret:other']],
  ])('%j with %j can never reach its hosts: refused', (network, refs) => {
    expect(codeOf(() => checkEgress({ network: normalizeNetworkPolicy(network), bindings, refs, sandboxed: true }))).toBe('EXECGATE_ERR_EGRESS_UNREACHABLE');
  });

  test('reachable combinations pass and say what narrows and what is injected', () => {
    const network = normalizeNetworkPolicy({ mode: 'allowlist', allow: ['*.github.com', 'registry.npmjs.org'] });
    const check = checkEgress({ network, bindings, refs: ['secret:gh', 'secret:npm'], sandboxed: true });
    expect(check.injected.map((b) => b.ref)).toEqual(['secret:gh']);
    expect(check.narrowing.map((b) => b.ref)).toEqual(['secret:npm']);
    const [injection] = createInjections(check, new Map([['secret:gh', 'ghp_abcdefghijklmnop1234']]));
    expect(injection!.sentinel).toMatch(/^[a-z]{3}_[a-z]{16}[0-9]{4}$/);
  });
});

describe('sentinels and swapping', () => {
  test('a sentinel has the value\'s byte length and per-position shape, and differs from it', () => {
    fc.assert(fc.property(fc.string({ minLength: 1, maxLength: 80, unit: 'binary' }), (value) => {
      const sentinel = createSentinel(value);
      expect(Buffer.byteLength(sentinel)).toBe(Buffer.byteLength(value));
      expect(sentinel).not.toBe(value);
      expect(sentinel).toMatch(/^[\x20-\x7e]*$/);
      const v = Buffer.from(value);
      for (let i = 0; i < sentinel.length; i++) {
        const byte = v[i]!;
        if (byte >= 0x41 && byte <= 0x5a) expect(sentinel[i]).toMatch(/[A-Z]/);
        if (byte >= 0x30 && byte <= 0x39) expect(sentinel[i]).toMatch(/[0-9]/);
      }
    }));
  });

  test('a streamed body gets every sentinel swapped however it is chunked', async () => {
    const value = 'tok-VALUE-0123456789abcdef';
    const sentinel = createSentinel(value);
    const swaps = getSwaps([{ ref: 'secret:t', value, sentinel, hosts: [] }]);
    await fc.assert(fc.asyncProperty(
      fc.array(fc.oneof(fc.constant(sentinel), fc.string({ maxLength: 20 })), { maxLength: 12 }),
      fc.array(fc.integer({ min: 1, max: 40 }), { minLength: 1, maxLength: 10 }),
      async (parts, sizes) => {
        const input = Buffer.from(parts.join(''));
        const chunks: Buffer[] = [];
        for (let at = 0, i = 0; at < input.length; i++) {
          const size = sizes[i % sizes.length]!;
          chunks.push(Buffer.from(input.subarray(at, at + size)));
          at += size;
        }
        const stream = Readable.from(chunks).pipe(new SwapStream(swaps));
        const out: Buffer[] = [];
        for await (const chunk of stream) out.push(chunk as Buffer);
        expect(Buffer.concat(out).toString()).toBe(parts.join('').split(sentinel).join(value));
      },
    ), { numRuns: 200 });
  });

  test('a Basic credential is decoded, swapped and re-encoded', () => {
    const value = 'ghp_abcdefghij0123456789';
    const sentinel = createSentinel(value);
    const swaps = getSwaps([{ ref: 'secret:gh', value, sentinel, hosts: [] }]);
    const used = new Set<string>();
    const header = `Basic ${Buffer.from(`x-access-token:${sentinel}`).toString('base64')}`;
    expect(swapHeaderValue('Authorization', header, swaps, used)).toBe(`Basic ${Buffer.from(`x-access-token:${value}`).toString('base64')}`);
    expect([...used]).toEqual(['secret:gh']);
  });
});

describe('resolved-address check', () => {
  test.each([
    ['127.0.0.1', 'loopback'], ['127.8.9.10', 'loopback'], ['::1', 'loopback'], ['::ffff:127.0.0.1', 'loopback'],
    ['169.254.169.254', 'metadata'], ['::ffff:169.254.169.254', 'metadata'], ['100.100.100.200', 'metadata'],
    ['fd00:ec2::254', 'metadata'], ['169.254.1.1', 'link-local'], ['fe80::1', 'link-local'], ['0.0.0.0', 'unspecified'],
    ['::', 'unspecified'], ['224.0.0.1', 'multicast-or-reserved'], ['255.255.255.255', 'multicast-or-reserved'],
  ])('%s is refused as %s', (address, why) => {
    expect(getAddressRefusal(address)).toBe(why);
  });

  test('numeric spellings of loopback that reach the system resolver as names are still refused', async () => {
    for (const name of ['2130706433', '0x7f000001', '0177.0.0.1', '127.1', 'localhost']) {
      expect(await resolveAllowed(name, systemResolver)).toEqual({ refusal: 'loopback' });
    }
  });

  test('public addresses pass; this host\'s own addresses do not', () => {
    expect(getAddressRefusal('203.0.113.10')).toBeUndefined();
    expect(getAddressRefusal('2001:db8::10')).toBeUndefined();
    const own = Object.values(networkInterfaces()).flat().find((entry) => entry && !entry.internal && entry.family === 'IPv4');
    if (own) expect(getAddressRefusal(own.address)).toBe('own-address');
  });
});

describe('certificate authority', () => {
  test('leaf certificates chain to the CA and name the host', () => {
    const ca = createEgressCa();
    const caCert = new X509Certificate(ca.certPem);
    expect(caCert.ca).toBe(true);
    expect(ca.getTrustBundle().endsWith(ca.certPem)).toBe(true);
    expect(ca.getSecureContext('a.test')).toBe(ca.getSecureContext('a.test'));
  });

  test('a CA that cannot be created is a coded error', () => {
    expect(codeOf(() => createEgressCa({ keyBits: 8 }))).toBe('EXECGATE_ERR_EGRESS_CA_FAILED');
    expect(codeOf(() => createEgressCa({ systemBundle: '/nonexistent/bundle.pem' }).getTrustBundle())).toBe('EXECGATE_ERR_EGRESS_CA_FAILED');
  });
});
