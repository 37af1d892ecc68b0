/*
 * The policy format: shipped files and documented examples validate, the default file is the
 * embedded default, layering works as documented, and every broken file gives a precise error.
 */
import { readFileSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { ExecgateError } from '../../src/errors';
import { policyToDocument } from '../../src/policy/document';
import { DEFAULT_POLICY, type EffectivePolicy } from '../../src/policy/effective';
import { checkPolicyFile, loadPolicyFile } from '../../src/policy/load';
import { formatProblem } from '../../src/policy/problems';
import { getSchema } from '../../src/policy/schema';
import { getYaml } from '../../src/policy/source';
import { formatDuration, formatSize, parseDuration, parseSize } from '../../src/policy/units';
import { makeTempDir } from '../helpers/tmp';
import { BROKEN_CASES } from './broken-cases';
import { POLICIES, getPolicyBlocks, policyFrom, writeFiles } from './helpers';

let tmp: ReturnType<typeof makeTempDir>;
beforeEach(() => { tmp = makeTempDir('execgate-policy-'); });
afterEach(() => tmp.cleanup());

const withoutSource = (policy: EffectivePolicy): Omit<EffectivePolicy, 'source'> => {
  const { source: _source, ...rest } = policy;
  return rest;
};

describe('shipped policies and documented examples', () => {
  const shipped = readdirSync(POLICIES).filter((name) => /\.(ya?ml|json)$/.test(name) && name !== 'schema.json');

  test('policies/ ships default, strict, ci and the aws, git-over-ssh and local-database examples', () => {
    expect(shipped.sort()).toEqual(['aws.yaml', 'ci.yaml', 'default.yaml', 'git-over-ssh.yaml', 'local-database.yaml', 'strict.yaml']);
  });

  test.each(shipped)('policies/%s validates', (name) => {
    const result = checkPolicyFile(join(POLICIES, name));
    expect(result.ok ? [] : result.problems.map(formatProblem)).toEqual([]);
  });

  test('every shipped policy points editors at the schema', () => {
    for (const name of shipped) expect(readFileSync(join(POLICIES, name), 'utf8')).toMatch(/^# yaml-language-server: \$schema=\.\/schema\.json$/m);
  });

  test('default.yaml is exactly the embedded default', () => {
    const loaded = loadPolicyFile(join(POLICIES, 'default.yaml'));
    expect(withoutSource(loaded.policy)).toEqual(withoutSource(DEFAULT_POLICY));
  });

  test('a policy of only `version: 1` is the embedded default', () => {
    expect(withoutSource(policyFrom('version: 1\n'))).toEqual(withoutSource(DEFAULT_POLICY));
  });

  test('strict.yaml: allowlist environment, no background, tight limits, no alias', () => {
    const { policy } = loadPolicyFile(join(POLICIES, 'strict.yaml'));
    expect(policy.env.mode).toBe('allowlist');
    expect(policy.modes.background.allowed).toBe(false);
    expect(policy.modes.sync).toEqual({ allowed: true, defaultTimeout: 30_000, maxTimeout: 300_000 });
    expect(policy.secrets.alias).toBe(false);
    expect(policy.rules.list.map((rule) => rule.id)).toContain('no-privilege-escalation');
  });

  test('ci.yaml layers on strict.yaml: base rules first, its own after', () => {
    const loaded = loadPolicyFile(join(POLICIES, 'ci.yaml'));
    expect(loaded.files.map((file) => file.slice(POLICIES.length + 1))).toEqual(['strict.yaml', 'ci.yaml']);
    const ids = loaded.policy.rules.list.map((rule) => rule.id);
    expect(ids.indexOf('no-privilege-escalation')).toBeLessThan(ids.indexOf('build-and-test'));
    expect(loaded.policy.rules.default).toBe('deny');
    expect(loaded.policy.modes.sync.maxTimeout).toBe(30 * 60_000);
    expect(loaded.policy.modes.background.allowed).toBe(false); // from strict.yaml
  });

  const readme = readFileSync(join(POLICIES, 'README.md'), 'utf8');
  const blocks = getPolicyBlocks(readme);

  test('policies/README.md has policy examples for every top-level key', () => {
    expect(blocks.length).toBeGreaterThanOrEqual(8);
    for (const key of ['extends', 'exec', 'cwd', 'env', 'rules', 'secrets', 'audit']) {
      expect(blocks.some((block) => new RegExp(`^${key}:|"${key}"`, 'm').test(block.text))).toBe(true);
    }
  });

  test('every YAML and JSON policy example in policies/README.md validates', () => {
    // Named blocks (`# file: NAME`) are written first so that examples can extend each other.
    const named = blocks.filter((block) => block.name);
    writeFiles(tmp.dir, Object.fromEntries(named.map((block) => [block.name as string, block.text])));
    const failures: string[] = [];
    blocks.forEach((block, index) => {
      const name = block.name ?? `example-${index}.${block.lang}`;
      if (!block.name) writeFileSync(join(tmp.dir, name), block.text);
      const result = checkPolicyFile(name, { cwd: tmp.dir });
      if (!result.ok) failures.push(...result.problems.map(formatProblem));
    });
    expect(failures).toEqual([]);
  });

  test('every key of the schema is explained in policies/README.md', () => {
    const keys = new Set<string>();
    const visit = (node: unknown): void => {
      if (node === null || typeof node !== 'object') return;
      const properties = (node as { properties?: Record<string, unknown> }).properties;
      if (properties) for (const key of Object.keys(properties)) keys.add(key);
      for (const value of Object.values(node as object)) visit(value);
    };
    visit(getSchema());
    keys.delete('$schema');
    const missing = [...keys].filter((key) => !readme.includes(`\`${key}\``) && !readme.includes(`.${key}\``) && !readme.includes(`${key}:`));
    expect(missing).toEqual([]);
  });
});

describe('the schema', () => {
  test('every object schema refuses unknown keys', () => {
    const loose: string[] = [];
    const visit = (node: unknown, path: string): void => {
      if (node === null || typeof node !== 'object') return;
      const schema = node as Record<string, unknown>;
      if (schema.properties !== undefined && schema.additionalProperties !== false) loose.push(path);
      if (schema.type === 'object' && schema.properties === undefined && typeof schema.additionalProperties !== 'object') loose.push(path);
      for (const [key, value] of Object.entries(schema)) visit(value, `${path}/${key}`);
    };
    visit(getSchema(), '#');
    expect(loose).toEqual([]);
  });

  test('is draft 2020-12', () => {
    expect(getSchema().$schema).toBe('https://json-schema.org/draft/2020-12/schema');
  });
});

describe('layering with extends', () => {
  test('restrictions accumulate base first, grants are replaced, mappings merge', () => {
    writeFiles(tmp.dir, {
      'org/base.yaml': [
        'version: 1',
        'cwd: { roots: [/srv, /opt] }',
        'env: { mode: allowlist, allowlist: [A_*], strip: [X1], set: { ONE: "1", TWO: "2" } }',
        'rules: { default: deny, list: [{ id: org-deny, action: deny, command: sudo }] }',
        'secrets: { allow: ["secret:*"], restrict: [{ ref: "secret:a", command: git }] }',
        '',
      ].join('\n'),
      'team.yaml': [
        'version: 1',
        'extends: ./org/base.yaml',
        'cwd: { roots: [/srv/team] }',
        'env: { allowlist: [B], strip: [X2], set: { TWO: "two" } }',
        'rules: { list: [{ id: team-allow, action: allow, command: make }] }',
        'secrets: { restrict: [{ ref: "secret:b", prefix: "./deploy" }] }',
        '',
      ].join('\n'),
    });
    const { policy, files } = loadPolicyFile('team.yaml', { cwd: tmp.dir });
    expect(files).toEqual([join(tmp.dir, 'org/base.yaml'), join(tmp.dir, 'team.yaml')]);
    expect(policy.cwd.roots).toEqual(['/srv/team']);
    expect(policy.env.allowlist).toEqual(['B']);
    expect(policy.env.mode).toBe('allowlist');
    expect(policy.env.strip).toEqual(['X1', 'X2']);
    expect(policy.env.set).toEqual({ ONE: '1', TWO: 'two' });
    expect(policy.rules.default).toBe('deny');
    expect(policy.rules.list.map((rule) => rule.id)).toEqual(['org-deny', 'team-allow']);
    expect(policy.secrets.restrict.map((restriction) => restriction.id)).toEqual(['base.yaml:secrets.restrict[0]', 'team.yaml:secrets.restrict[0]']);
  });

  test('a base reached twice is merged once; later bases override earlier ones', () => {
    writeFiles(tmp.dir, {
      'common.yaml': 'version: 1\nrules: { list: [{ id: common, action: deny, command: sudo }] }\nexec: { grace: 1s }\n',
      'a.yaml': 'version: 1\nextends: common.yaml\nexec: { grace: 2s }\n',
      'b.yaml': 'version: 1\nextends: common.yaml\nexec: { grace: 3s }\n',
      'top.yaml': 'version: 1\nextends: [a.yaml, b.yaml]\n',
    });
    const { policy, files } = loadPolicyFile(join(tmp.dir, 'top.yaml'));
    expect(files.map((file) => file.slice(tmp.dir.length + 1))).toEqual(['common.yaml', 'a.yaml', 'b.yaml', 'top.yaml']);
    expect(policy.rules.list.map((rule) => rule.id)).toEqual(['common']);
    expect(policy.grace).toBe(3000);
  });

  test('a cycle through a symlink is found', () => {
    writeFiles(tmp.dir, { 'a.yaml': 'version: 1\nextends: ./link.yaml\n' });
    symlinkSync(join(tmp.dir, 'a.yaml'), join(tmp.dir, 'link.yaml'));
    const result = checkPolicyFile('a.yaml', { cwd: tmp.dir });
    expect(result.ok ? [] : result.problems.map(formatProblem)).toEqual(['a.yaml:2:10: `extends`: circular `extends`: a.yaml -> a.yaml; a policy cannot extend itself']);
  });

  test('`execgate:NAME` extends a shipped policy', () => {
    const policy = policyFrom('version: 1\nextends: execgate:strict\nexec: { modes: { sync: { maxTimeout: 10m } } }\n');
    expect(policy.env.mode).toBe('allowlist');
    expect(policy.modes.sync).toEqual({ allowed: true, defaultTimeout: 30_000, maxTimeout: 600_000 });
  });

  test('`~` in roots and the audit path is the home directory; timeout 0 under a maximum is the maximum', () => {
    const policy = policyFrom('version: 1\ncwd: { roots: ["~", ~/work] }\naudit: { path: ~/logs/audit.log }\nexec: { modes: { background: { timeout: 0, maxTimeout: 4h } } }\n', '/home/ops');
    expect(policy.cwd.roots).toEqual(['/home/ops', '/home/ops/work']);
    expect(policy.audit.path).toBe('/home/ops/logs/audit.log');
    expect(policy.modes.background).toEqual({ allowed: true, defaultTimeout: 4 * 3_600_000, maxTimeout: 4 * 3_600_000 });
  });

  test('the resolved policy is deeply frozen', () => {
    const { policy } = loadPolicyFile(join(POLICIES, 'ci.yaml'));
    expect(Object.isFrozen(policy)).toBe(true);
    expect(Object.isFrozen(policy.rules.list)).toBe(true);
    expect(Object.isFrozen(policy.rules.list[0])).toBe(true);
    expect(Object.isFrozen(policy.env.set)).toBe(true);
  });

  test('`policy show` output (the policy as a document) is itself a valid policy that loads to the same policy', () => {
    for (const name of ['default.yaml', 'strict.yaml', 'ci.yaml']) {
      const { policy } = loadPolicyFile(join(POLICIES, name));
      const file = join(tmp.dir, `shown-${name}`);
      writeFileSync(file, getYaml().stringify(policyToDocument(policy)));
      const again = loadPolicyFile(file).policy;
      expect(withoutSource(again)).toEqual(withoutSource(policy));
    }
  });
});

describe('units', () => {
  test.each([
    [5000, 5000], ['500ms', 500], ['30s', 30_000], ['1.5s', 1500], ['5m', 300_000], ['2h', 7_200_000], ['1d', 86_400_000], ['10 s', 10_000],
  ])('duration %j = %d ms', (text, ms) => expect(parseDuration(text)).toBe(ms));
  test.each([
    [1024, 1024], ['1KiB', 1024], ['1KB', 1000], ['64MiB', 64 * 1024 ** 2], ['2GiB', 2 * 1024 ** 3], ['1.5MiB', 1.5 * 1024 ** 2],
  ])('size %j = %d bytes', (text, bytes) => expect(parseSize(text)).toBe(bytes));
  test('format back to the shortest exact spelling', () => {
    expect([0, 500, 5000, 120_000, 3_600_000, 1234].map(formatDuration)).toEqual([0, '500ms', '5s', '2m', '1h', '1234ms']);
    expect([0, 1024, 1024 ** 2, 1000, 256 * 1024 ** 2].map(formatSize)).toEqual([0, '1KiB', '1MiB', 1000, '256MiB']);
  });
});

describe('broken policy files', () => {
  test(`at least 15 broken files are covered (${BROKEN_CASES.length})`, () => {
    expect(BROKEN_CASES.length).toBeGreaterThanOrEqual(15);
  });

  test.each(BROKEN_CASES.map((c) => [c.name, c] as const))('%s', (_name, brokenCase) => {
    writeFiles(tmp.dir, brokenCase.files);
    const result = checkPolicyFile(brokenCase.main, { cwd: tmp.dir });
    expect(result.ok).toBe(false);
    if (result.ok) return;
    const lines = result.problems.map(formatProblem);
    if (typeof brokenCase.first === 'string') expect(lines[0]).toBe(brokenCase.first);
    else expect(lines[0]).toMatch(brokenCase.first);
    expect(result.problems[0]?.code).toBe(brokenCase.code);
    expect(lines).toHaveLength(brokenCase.count ?? 1);
    for (const line of lines) expect(line).toMatch(/^[^:\s]+:\d+:\d+: \S/);

    let thrown: unknown;
    try {
      loadPolicyFile(brokenCase.main, { cwd: tmp.dir });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ExecgateError);
    expect((thrown as ExecgateError).code).toBe(brokenCase.code);
    expect((thrown as ExecgateError).message).toContain(lines[0]);
    expect((thrown as ExecgateError).details.problems).toEqual(lines);
  });
});
