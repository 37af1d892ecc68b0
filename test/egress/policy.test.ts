/*
 * `sandbox.network` and `secrets.bind` through the real policy loader: shipped policies, layering,
 * and load-time errors with their own codes and file positions.
 */
import { join } from 'node:path';
import { checkPolicyFile, loadPolicyFile } from '../../src/policy/load';
import { makeTempDir } from '../helpers/tmp';
import { POLICIES, policyFrom, writeFiles } from '../policy/helpers';
import { decideDestination } from '../../src/egress/rules';

function loadError(files: Record<string, string>, entry = 'policy.yaml'): { code: string; message: string } {
  const tmp = makeTempDir('execgate-egress-policy-');
  try {
    writeFiles(tmp.dir, files);
    loadPolicyFile(join(tmp.dir, entry));
  } catch (error) {
    return error as { code: string; message: string };
  } finally {
    tmp.cleanup();
  }
  throw new Error('the policy loaded');
}

test('default is `open` through the proxy (the run itself has a private namespace), strict an empty allowlist, ci binds its tokens by injection', () => {
  expect(loadPolicyFile(join(POLICIES, 'default.yaml')).policy.network.mode).toBe('open');
  expect(loadPolicyFile(join(POLICIES, 'default.yaml')).policy.sandbox.network).toBe('none');
  const strict = loadPolicyFile(join(POLICIES, 'strict.yaml')).policy;
  expect(strict.network.mode).toBe('allowlist');
  expect(decideDestination(strict.network, [], 'github.com', 443).allowed).toBe(false);
  // Until the proxy is wired into runs, an egress policy gets the loopback-only namespace.
  expect(strict.sandbox.network).toBe('none');
  const ci = loadPolicyFile(join(POLICIES, 'ci.yaml')).policy;
  expect(ci.secrets.bind.map((b) => [b.ref, b.delivery, b.hosts.map((h) => h.text)])).toEqual([
    ['secret:github-token', 'inject', ['github.com', 'api.github.com']],
    ['secret:npm-token', 'inject', ['registry.npmjs.org']],
  ]);
  expect(decideDestination(ci.network, [], 'api.github.com', 443).allowed).toBe(true);
});

test('extending strict: allow is replaced, deny and bind accumulate', () => {
  const policy = policyFrom([
    'version: 1',
    `extends: ${join(POLICIES, 'ci.yaml')}`,
    'sandbox: { network: { allow: [example.org], deny: [bad.example.org] } }',
    'secrets: { bind: [{ ref: "secret:other", hosts: [example.org] }] }',
  ].join('\n'));
  expect(policy.network.allow.map((h) => h.text)).toEqual(['example.org']);
  expect(policy.secrets.bind.map((b) => b.ref)).toEqual(['secret:github-token', 'secret:npm-token', 'secret:other']);
});

test('a bad host pattern is refused at load time with its code and position', () => {
  const error = loadError({ 'policy.yaml': 'version: 1\nsandbox:\n  network:\n    mode: allowlist\n    allow: [github.com, "https://api.*.com"]\n' });
  expect(error.code).toBe('EXECGATE_ERR_EGRESS_HOST_PATTERN_INVALID');
  expect(error.message).toContain('policy.yaml:5:');
  expect(error.message).toContain('sandbox.network.allow[1]');
});

test('a bound secret with no hosts, or bound twice across layers, is refused at load time', () => {
  const none = loadError({ 'policy.yaml': 'version: 1\nsecrets:\n  bind:\n    - { ref: "secret:gh", hosts: [] }\n' });
  expect(none.code).toBe('EXECGATE_ERR_EGRESS_BIND_INVALID');
  expect(none.message).toContain('lists no hosts');
  // Without `hosts` at all (only `aws-sigv4` has a default): the same coded error.
  const missing = loadError({ 'policy.yaml': 'version: 1\nsecrets:\n  bind:\n    - { ref: "secret:gh", delivery: inject }\n' });
  expect(missing.code).toBe('EXECGATE_ERR_EGRESS_BIND_INVALID');
  expect(missing.message).toContain('lists no hosts');
  const twice = loadError({
    'base.yaml': 'version: 1\nsecrets: { bind: [{ ref: "secret:gh", hosts: [github.com] }] }\n',
    'policy.yaml': 'version: 1\nextends: base.yaml\nsecrets: { bind: [{ ref: "secret:gh", hosts: [gitlab.com] }] }\n',
  });
  expect(twice.code).toBe('EXECGATE_ERR_EGRESS_BIND_INVALID');
  expect(twice.message).toMatch(/already bound in \S*base\.yaml/);
});

// What the loader once checked by hand again after the schema (egress/rules.ts): each refused
// by the schema itself, as a policy error at the value.
test.each([
  ['sandbox: { network: { mode: allowlist, allow: x.com } }', 'sandbox.network.allow'],
  ['sandbox: { network: { mode: allowlist, allow: [3] } }', 'sandbox.network.allow[0]'],
  ['sandbox: { network: { upstream: "http://proxy.test:3128" } }', 'sandbox.network.upstream'],
  ['sandbox: { network: { upstream: { proxy: 3 } } }', 'sandbox.network.upstream.proxy'],
  ['sandbox: { network: { upstream: { noProxy: a.test } } }', 'sandbox.network.upstream.noProxy'],
  ['sandbox: { network: { upstream: { ca: [relative.pem] } } }', 'sandbox.network.upstream.ca[0]'],
  ['secrets: { bind: "secret:gh" }', 'secrets.bind'],
  ['secrets: { bind: [{ ref: gh, hosts: [github.com] }] }', 'secrets.bind[0].ref'],
  ['secrets: { bind: [{ ref: "secret:gh", hosts: [github.com], delivery: inject, headers: [Bad Header] }] }', 'secrets.bind[0].headers[0]'],
  ['secrets: { bind: [{ ref: "secret:gh", hosts: [github.com], delivery: inject, methods: [] }] }', 'secrets.bind[0].methods'],
  ['secrets: { bind: [{ ref: "secret:gh", hosts: [github.com], delivery: inject, paths: [repos] }] }', 'secrets.bind[0].paths[0]'],
  ['secrets: { bind: [{ ref: "secret:gh", hosts: [github.com], delivery: inject, paths: ["/a%2fb"] }] }', 'secrets.bind[0].paths[0]'],
  ['secrets: { bind: [{ ref: "secret:gh", hosts: [github.com], delivery: inject, body: "yes" }] }', 'secrets.bind[0].body'],
  ['secrets: { bind: [{ ref: "secret:gh", hosts: [github.com], delivery: inject, responses: raw }] }', 'secrets.bind[0].responses'],
  ['secrets: { bind: [{ ref: "secret:gh", hosts: [github.com], delivery: inject, header: [X] }] }', 'secrets.bind[0].header'],
])('the schema refuses %s', (section, path) => {
  const tmp = makeTempDir('execgate-egress-policy-');
  try {
    writeFiles(tmp.dir, { 'policy.yaml': `version: 1\n${section}\n` });
    const result = checkPolicyFile(join(tmp.dir, 'policy.yaml'));
    expect(result.ok).toBe(false);
    expect(result.problems.filter((problem) => problem.path === path).map((problem) => problem.code)).toEqual(['EXECGATE_ERR_POLICY_INVALID']);
  } finally {
    tmp.cleanup();
  }
});

test('schema errors stay policy errors: unknown mode, unknown key, unknown delivery', () => {
  expect(loadError({ 'policy.yaml': 'version: 1\nsandbox: { network: { mode: sometimes } }\n' }).code).toBe('EXECGATE_ERR_POLICY_INVALID');
  expect(loadError({ 'policy.yaml': 'version: 1\nsandbox: { network: { allowed: [x.com] } }\n' }).code).toBe('EXECGATE_ERR_POLICY_INVALID');
  expect(loadError({ 'policy.yaml': 'version: 1\nsecrets: { bind: [{ ref: "secret:a", hosts: [a.com], delivery: mail }] }\n' }).code).toBe('EXECGATE_ERR_POLICY_INVALID');
});
