'use strict';
/*
 * Writes src/policy/schema-validator.generated.ts: the policy schema's validator compiled ahead
 * of time with ajv's standalone code generation, so that loading a policy does not load ajv or
 * compile the schema (about 200 ms on a small machine; the generated code loads in a few).
 *
 * The generated file records the SHA-256 of the schema it was made from; src/policy/schema.ts
 * uses it only when that matches policies/schema.json and compiles with ajv otherwise, so a stale
 * file is slow, never wrong. A test fails while it is stale. Regenerate after editing the schema:
 *
 *   npm run generate:validator        (builds first: the schema helpers are read from dist/)
 */
const { writeFileSync } = require('node:fs');
const { join } = require('node:path');

const GENERATED_VALIDATOR_PATH = join(__dirname, '..', 'src', 'policy', 'schema-validator.generated.ts');

/** `schema`: the module src/policy/schema.ts (built, or as the tests load it). */
function generateValidatorSource(schema = require('../dist/policy/schema')) {
  const { default: Ajv2020 } = require('ajv/dist/2020');
  const { default: standaloneCode } = require('ajv/dist/standalone');
  const ajv = new Ajv2020({ ...schema.AJV_OPTIONS, code: { source: true, lines: true, esm: false } });
  const validate = ajv.compile(schema.getSchema());
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
    '// Generated from policies/schema.json by scripts/generate-validator.js; do not edit.',
    `export const SCHEMA_SHA256 = '${schema.getSchemaDigest()}';`,
    `export { ${name} as validate };`,
    body.trimEnd(),
    '',
  ].join('\n');
}

module.exports = { GENERATED_VALIDATOR_PATH, generateValidatorSource };

if (require.main === module) writeFileSync(GENERATED_VALIDATOR_PATH, generateValidatorSource());
