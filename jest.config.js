'use strict';
/** @type {import('jest').Config} */
module.exports = {
  testEnvironment: 'node',
  roots: ['<rootDir>/test'],
  testMatch: ['**/*.test.ts'],
  transform: {
    '^.+\\.ts$': ['ts-jest', { tsconfig: 'tsconfig.json', diagnostics: { warnOnly: false } }],
  },
  // A bound on a hang, not a speed check: on a loaded 2-core machine a test that starts several
  // sandboxes or CLI processes can take well over 30 s.
  testTimeout: 120000,
  // Tests spawn real processes; two cores run at most two files at a time.
  maxWorkers: 2,
};
