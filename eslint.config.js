// @ts-check
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import redos from 'eslint-plugin-redos';

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      '.cache/**',
      '.stryker-tmp/**',
      'reports/**',
      'hack/**',
      'scripts/*.mjs',
      'eslint.config.js',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test's test()/describe() return promises the runner itself awaits.
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['test', 'describe', 'it', 'suite'] },
          ],
        },
      ],
      // @kubernetes/client-node models are classes with no behaviour; plain object literals are
      // how the library itself expects them to be written.
      '@typescript-eslint/no-unsafe-class-instance-assignment': 'off',
      // For the same reason spreading a model (a plain object at run time) is fine.
      '@typescript-eslint/no-misused-spread': 'off',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true },
      ],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  {
    // DESIGN §14: tenants write the text our regexes read (images, labels, kubelet messages,
    // registry headers), so no regex may backtrack super-linearly (recheck's analysis).
    // Only src: the tests' patterns read our own output, and recheck takes minutes over them.
    files: ['src/**/*.ts'],
    plugins: { redos },
    rules: {
      // A pattern recheck cannot decide fails too; its time limit is generous so a loaded machine
      // does not turn a safe pattern into an error (the slowest in src takes about 1.5 s).
      'redos/no-vulnerable': ['error', { ignoreErrors: false, timeout: 60_000 }],
    },
  },
  {
    files: ['test/**/*.ts', 'bench/**/*.ts'],
    rules: {
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },
);
