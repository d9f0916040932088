// test-schedule: cpu
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { test } from 'node:test';

// The type checker and the type-aware linter are part of the suite, so CI refuses code that
// would not compile or that floats promises, not just code whose tests fail.
const run = (cmd: string, args: string[]): Promise<{ code: number; out: string }> =>
  new Promise((resolve) => {
    execFile(cmd, args, { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number(error.code ?? 1) : 0, out: `${stdout}${stderr}` });
    });
  });

const checks: readonly [name: string, args: readonly string[]][] = [
  [
    'the whole project type-checks (tsc --noEmit)',
    ['node_modules/typescript/bin/tsc', '--noEmit', '-p', 'tsconfig.json'],
  ],
  ['ESLint with typescript-eslint type-checked rules is clean', ['node_modules/eslint/bin/eslint.js', '.']],
  [
    'the code is formatted with Prettier',
    [
      'node_modules/prettier/bin/prettier.cjs',
      '--check',
      'src',
      'test',
      'scripts',
      'bench',
      'config',
      'docs',
      'README.md',
    ],
  ],
];

for (const [name, args] of checks) {
  test(name, async () => {
    const { code, out } = await run(process.execPath, [...args]);
    assert.equal(code, 0, out);
  });
}
