// ESLint over the sources (typescript-eslint's type-aware rules) and the tests (its syntactic
// rules: the tests parse JSON and child output, where the type-aware "unsafe any" rules only add
// noise). `npm run lint` runs it beside shellcheck.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/**', 'docs/**', 'node_modules/**', 'coverage/**', 'bench/results/**'] },
  {
    files: ['src/**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommendedTypeChecked],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      // Optional modules (node-pty, the keyring, libsodium, the MCP SDK, openai) are loaded with
      // require() at first use, so that importing execgate does not load them.
      '@typescript-eslint/no-require-imports': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      // Terminal and log escaping matches control characters on purpose.
      'no-control-regex': 'off',
      // Messages describe a bad value after checking its type (`typeof` kept in a variable, which
      // does not narrow), and JSON.stringify is tried first.
      '@typescript-eslint/no-base-to-string': 'off',
      // Methods that implement async interfaces (MCP transports' start/close, tools' run) are
      // async without awaiting anything.
      '@typescript-eslint/require-await': 'off',
    },
  },
  {
    files: ['test/**/*.ts'],
    extends: [js.configs.recommended, ...tseslint.configs.recommended],
    rules: {
      '@typescript-eslint/no-require-imports': 'off',
      // JSON-RPC answers and mocks are typed loosely in tests; control characters are test data.
      '@typescript-eslint/no-explicit-any': 'off',
      'no-control-regex': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
    },
  },
);
