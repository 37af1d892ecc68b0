/*
 * The policy format has one definition, the TypeBox one in src/policy/schema-def.ts; the build
 * emits policies/schema.json from it (committed for editors, shipped for `$schema` users) and
 * compiles the validator into dist/. Both must be what the definition says now, and the package
 * must run on them alone (TypeBox is a devDependency).
 */
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { getPolicySchemaText } from '../../src/policy/schema-def-text';
import { SCHEMA_PATH, VALIDATOR_PATH } from '../../src/policy/schema';
import { POLICIES, REPO } from './helpers';

// The build step is a script (scripts/), not part of the package: plain CommonJS.
const { SCHEMA_FILE, VALIDATOR_FILE, getValidatorSource } = require('../../scripts/postbuild') as {
  SCHEMA_FILE: string;
  VALIDATOR_FILE: string;
  getValidatorSource: (schemaText: string) => string;
};

test('the runtime reads the files the build writes', () => {
  expect(SCHEMA_PATH).toBe(SCHEMA_FILE);
  expect(VALIDATOR_PATH).toBe(VALIDATOR_FILE);
});

test('policies/schema.json is the schema the definition emits (regenerate: npm run build)', () => {
  expect(readFileSync(SCHEMA_PATH, 'utf8')).toBe(getPolicySchemaText());
});

test('dist/policy/schema-validator.js is compiled from that schema (regenerate: npm run build)', () => {
  expect(readFileSync(VALIDATOR_PATH, 'utf8')).toBe(getValidatorSource(getPolicySchemaText()));
});

test('the package loads a policy with the built validator, never the definition or TypeBox', () => {
  const script = `
    const { loadPolicyFile } = require(${JSON.stringify(join(REPO, 'dist', 'index.js'))});
    loadPolicyFile(${JSON.stringify(join(POLICIES, 'ci.yaml'))});
    process.stdout.write(JSON.stringify(Object.keys(require.cache)));`;
  const result = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
  expect(result.stderr).toBe('');
  const loaded = JSON.parse(result.stdout) as string[];
  expect(loaded).toContain(VALIDATOR_PATH);
  expect(loaded.filter((file) => /typebox|schema-def/.test(file))).toEqual([]);
});
