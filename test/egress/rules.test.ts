import fc from 'fast-check';
import { X509Certificate } from 'node:crypto';
import { networkInterfaces } from 'node:os';
import { Readable } from 'node:stream';
import { ExecgateError } from '../../src/errors';
import { getAddressRefusal, resolveAllowed, systemResolver } from '../../src/egress/address';
import { createEgressCa } from '../../src/egress/ca';
import { canonicalHost, parseAuthority } from '../../src/egress/authority';
import { matchesHost, parseHostPattern } from '../../src/egress/hosts';
import { getSwaps, SwapStream } from '../../src/egress/inject';
import { matchesPath, swapCredential } from '../../src/egress/placement';
import { checkEgress, createInjections } from '../../src/egress/plan';
import { decideDestination } from '../../src/egress/rules';
import { normalizeNetworkPolicy, normalizeSecretBindings } from '../../src/policy/egress-settings';
import type { NetworkDocument, SecretBindingDocument } from '../../src/policy/schema-def';
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

describe('one host parser (WHATWG URL host parsing, as Node applies it)', () => {
  test.each([
    ['0x7f.1', '127.0.0.1'], ['2130706433', '127.0.0.1'], ['0177.0.0.1', '127.0.0.1'], ['127.1', '127.0.0.1'],
    ['0xcb00710a', '203.0.113.10'], ['0xcb.0.0x71.0xa', '203.0.113.10'], ['3405803786', '203.0.113.10'],
    ['API.Example.COM.', 'api.example.com'], ['%61pi.example.com', 'api.example.com'], ['bücher.de', 'xn--bcher-kva.de'],
    ['[::ffff:127.0.0.1]', '127.0.0.1'], ['[::FFFF:7F00:1]', '127.0.0.1'], ['[2001:DB8:0::1]', '2001:db8::1'], ['2001:db8::1', '2001:db8::1'],
  ])('%j is %j', (text, canonical) => {
    expect(canonicalHost(text)).toBe(canonical);
  });

  test.each(['', 'a b', 'evil.test@allowed.test', 'allowed.test/x', 'a.test?x', 'a.test#x', 'a\\b', 'a.test:443', 'foo.123', 'a..b', '[::1', '\u0000a'])('%j is not a host', (text) => {
    expect(canonicalHost(text)).toBeUndefined();
  });

  test('authorities: host and port read once, IPv6 in brackets, the port strictly decimal', () => {
    expect(parseAuthority('0xcb00710a:443')).toEqual({ host: '203.0.113.10', port: 443 });
    expect(parseAuthority('[::1]:8080')).toEqual({ host: '::1', port: 8080 });
    expect(parseAuthority('Allowed.Test', 443)).toEqual({ host: 'allowed.test', port: 443 });
    for (const bad of ['allowed.test', 'allowed.test:0', 'allowed.test:65536', 'allowed.test:+80', 'allowed.test:0x50', 'a@b:443', '[::1]x:1']) {
      expect(parseAuthority(bad)).toBeUndefined();
    }
  });

  test('patterns are read by the same parser: a hex spelling in a policy is the address it names', () => {
    expect(parseHostPattern('0xcb00710a')).toMatchObject({ kind: 'ip', host: '203.0.113.10' });
    expect(parseHostPattern('Bücher.de')).toMatchObject({ kind: 'name', host: 'xn--bcher-kva.de' });
    expect(codeOf(() => parseHostPattern('*.0x7f.1'))).toBe('EXECGATE_ERR_EGRESS_HOST_PATTERN_INVALID');
    const deny = normalizeNetworkPolicy({ mode: 'open', deny: ['203.0.113.10'], allow: ['203.0.113.10'] });
    expect(decideDestination(deny, [], canonicalHost('0xcb.0.0x71.0xa')!, 443)).toEqual({ allowed: false, rule: 'deny:203.0.113.10' });
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

  // A mode or a list of another shape is the schema's to refuse (egress/policy.test.ts).
  test('a host pattern that does not parse: coded error', () => {
    expect(codeOf(() => normalizeNetworkPolicy({ mode: 'allowlist', allow: ['http://x.com'] }))).toBe('EXECGATE_ERR_EGRESS_HOST_PATTERN_INVALID');
  });
});

describe('secrets.bind', () => {
  // What the schema cannot say; a binding of another shape is the schema's to refuse
  // (egress/policy.test.ts).
  test.each<[SecretBindingDocument[], RegExp]>([
    [[{ ref: 'secret:gh', hosts: [] }], /lists no hosts/],
    [[{ ref: 'secret:gh', hosts: ['github.com'] }, { ref: 'secret:gh', hosts: ['x.com'] }], /bound twice/],
    [[{ ref: 'secret:gh', hosts: ['github.com'], delivery: 'inject', headers: ['Host'] }], /frames or routes/],
    [[{ ref: 'secret:gh', hosts: ['github.com'], delivery: 'inject', headers: ['Cookie'] }], /`cookies` instead/],
    [[{ ref: 'secret:gh', hosts: ['github.com'], delivery: 'inject', http: ['*.github.com'] }], /named exactly/],
    [[{ ref: 'secret:gh', hosts: ['github.com'], delivery: 'inject', http: ['other.test'] }], /not one of the binding's `hosts`/],
    [[{ ref: 'secret:gh', hosts: ['github.com'], headers: ['X-Api-Key'] }], /applies to `delivery: inject` only/],
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

  test('placements: Authorization by default; listed ones replace it; http ports default to 80', () => {
    const [plain, listed] = normalizeSecretBindings([
      { ref: 'secret:a', hosts: ['a.test'], delivery: 'inject' },
      { ref: 'secret:b', hosts: ['b.test'], delivery: 'inject', headers: ['X-Api-Key'], query: ['key'], cookies: ['sid'], path: true, methods: ['get'], paths: ['/v1'], http: ['b.test'], responses: 'identity' },
    ]);
    expect(plain!.place).toEqual({ headers: ['authorization'], query: [], cookies: [], path: false, body: false });
    expect(plain!.http).toEqual([]);
    expect(plain!.responses).toBe('decode');
    expect(listed!.place).toEqual({ headers: ['x-api-key'], query: ['key'], cookies: ['sid'], path: true, body: false });
    expect(listed!.methods).toEqual(['GET']);
    expect(listed!.http.map((h) => [h.host, h.port])).toEqual([['b.test', 80]]);
  });

  test('path rules: a prefix ends at a segment boundary; `*` is one segment, `**` anything', () => {
    expect(matchesPath('/repos', '/repos')).toBe(true);
    expect(matchesPath('/repos', '/repos/a/b')).toBe(true);
    expect(matchesPath('/repos', '/reposx')).toBe(false);
    expect(matchesPath('/repos/', '/repos/x')).toBe(true);
    expect(matchesPath('/repos/*/issues', '/repos/a/issues')).toBe(true);
    expect(matchesPath('/repos/*/issues', '/repos/a/b/issues')).toBe(false);
    expect(matchesPath('/repos/**', '/repos/a/b/issues')).toBe(true);
    expect(matchesPath('/a.b', '/aXb')).toBe(false);
  });

  test('sandbox.network.upstream: a parent proxy URL or `direct`, NO_PROXY names, absolute CA paths', () => {
    expect(normalizeNetworkPolicy({ mode: 'open', upstream: { proxy: 'http://proxy.corp:3128', noProxy: ['internal.corp'], ca: ['/etc/corp/ca.pem'] } }).upstream)
      .toEqual({ proxy: 'http://proxy.corp:3128', noProxy: ['internal.corp'], ca: ['/etc/corp/ca.pem'] });
    // The URL and the names; anything not a string, a list or an absolute path is the schema's.
    for (const upstream of [{ proxy: 'socks5://x:1' }, { proxy: 'http://x:1/path' }, { noProxy: ['  '] }]) {
      expect(codeOf(() => normalizeNetworkPolicy({ mode: 'open', upstream }))).toBe('EXECGATE_ERR_EGRESS_UPSTREAM_INVALID');
    }
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

  test.each<[NetworkDocument, string[]]>([
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
    const header = `Basic ${Buffer.from(`x-access-token:${sentinel}`).toString('base64')}`;
    expect(swapCredential(header, sentinel, value)).toBe(`Basic ${Buffer.from(`x-access-token:${value}`).toString('base64')}`);
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
