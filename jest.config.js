'use strict';
const { compilerOptions } = require('./tsconfig.json');

/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    // Transpile only (one file at a time, no type information): the type check of src, test and
    // bench is `npm run typecheck`, which `npm test` runs once before jest (pretest). Checking
    // types in the transform made every worker build its own program and check every file it
    // loaded again: about 100 s of CPU on a fresh clone, where no transform cache exists yet.
    '^.+\\.ts$': ['ts-jest', { tsconfig: { ...compilerOptions, isolatedModules: true }, diagnostics: { warnOnly: false } }],
  },
  // A bound on a hang, not a speed check: on a loaded 2-core machine a test that starts several
  // sandboxes or CLI processes can take well over 30 s.
  testTimeout: 120000,
  // Tests spawn real processes; two cores run at most two files at a time.
  maxWorkers: 2,
};
