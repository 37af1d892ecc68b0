/*
 * Writes src/policy/schema-validator.generated.ts: the schema validator compiled ahead of time
 * with ajv's standalone code generation, so that loading a policy does not load ajv or compile
 * the schema (about 200 ms on a small machine; the generated code loads in a few).
 *
 * The generated file records the SHA-256 of the schema it was made from; schema.ts uses it only
 * when that matches policies/schema.json and compiles with ajv otherwise, so a stale file is slow,
 * never wrong. A test fails while it is stale. Regenerate after editing the schema:
 *
 *   npm run generate:validator
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AJV_OPTIONS, getSchema, getSchemaDigest } from './schema';

export const GENERATED_VALIDATOR_PATH = join(__dirname, '..', '..', 'src', 'policy', 'schema-validator.generated.ts');

export function generateValidatorSource(): string {
  const { default: Ajv2020 } = require('ajv/dist/2020') as { default: new (options: object) => { compile(schema: object): unknown } };
  const { default: standaloneCode } = require('ajv/dist/standalone') as { default: (ajv: unknown, validate: unknown) => string };
  const ajv = new Ajv2020({ ...AJV_OPTIONS, code: { source: true, lines: true, esm: false } });
  const validate = ajv.compile(getSchema()) as { name: string };
  const code = standaloneCode(ajv, validate);
  const name = /module\.exports = (validate\d+);/.exec(code)?.[1];
  if (!name) throw new Error('Unexpected output from ajv standalone code generation.');
  const body = code
    .replace(/^"use strict";\n?/, '')
    .replace(`module.exports = ${name};\n`, '')
    .replace(`module.exports.default = ${name};\n`, '');
  return [
    '/* eslint-disable */',
    '// @ts-nocheck',
    '// Generated from policies/schema.json by src/policy/generate-validator.ts; do not edit.',
    `export const SCHEMA_SHA256 = '${getSchemaDigest()}';`,
    `export { ${name} as validate };`,
    body.trimEnd(),
    '',
  ].join('\n');
}

export function writeValidator(path = GENERATED_VALIDATOR_PATH): void {
  writeFileSync(path, generateValidatorSource());
}
