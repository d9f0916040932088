#!/usr/bin/env node
// Runs the whole test suite: builds (or reuses) the real control plane once, runs every
// test file under node's test runner, and ends with the line CI reads: `N passed, N failed`.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const unitOnly = args.includes('--unit');
// The end-to-end suite (a real node, the image, local registries) runs only when asked:
// `npm run test:e2e` (docs/node.md). It needs root and scripts/install-node-host.sh.
const e2e = args.includes('--e2e');
const filters = args.filter((a) => !a.startsWith('--'));

function findTests(dir) {
  const out = [];
  let entries = [];
  try {
    entries = readdirSync(dir);
  } catch {
    return out;
  }
  for (const name of entries.sort()) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...findTests(path));
    else if (name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

const dirs = unitOnly ? ['test/unit'] : e2e ? ['test/e2e'] : ['test/static', 'test/unit', 'test/integration'];
let files = dirs.flatMap((d) => findTests(join(root, d))).map((f) => relative(root, f));
if (filters.length > 0) files = files.filter((f) => filters.some((flt) => f.includes(flt)));
if (files.length === 0) {
  console.error('run-tests: no test files matched');
  process.exit(2);
}

if (!unitOnly) {
  // Build the control plane before any test starts so no test timeout covers a cold Go build.
  const build = spawnSync(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'control-plane', 'build'],
    {
      cwd: root,
      stdio: 'inherit',
    },
  );
  if (build.status !== 0) {
    console.error('run-tests: the control plane could not be built (see above)');
    console.log('0 passed, 1 failed');
    process.exit(1);
  }
  // The node's binaries and the image, likewise before any test timeout runs.
  for (const what of e2e ? ['node', 'image'] : []) {
    const step = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'control-plane', what], {
      cwd: root,
      stdio: 'inherit',
    });
    if (step.status !== 0) {
      console.error(`run-tests: rtb control-plane ${what} failed (see above)`);
      console.log('0 passed, 1 failed');
      process.exit(1);
    }
  }
}

const outDir = mkdtempSync(join(tmpdir(), 'rtb-tests-'));
const countsFile = join(outDir, 'counts.json');
const concurrency = process.env.RTB_TEST_CONCURRENCY ?? '2';
const result = spawnSync(
  process.execPath,
  [
    '--import',
    'tsx',
    '--test',
    `--test-concurrency=${concurrency}`,
    '--test-timeout=600000',
    '--test-reporter=spec',
    '--test-reporter-destination=stdout',
    '--test-reporter=./scripts/count-reporter.mjs',
    `--test-reporter-destination=${countsFile}`,
    ...files,
  ],
  { cwd: root, stdio: 'inherit', env: { ...process.env, RTB_TEST_RUN: '1' } },
);

let counts = { passed: 0, failed: 1, skipped: 0 };
try {
  counts = JSON.parse(readFileSync(countsFile, 'utf8'));
} catch {
  console.error('run-tests: the test runner left no counts');
}
rmSync(outDir, { recursive: true, force: true });
const failed = counts.failed + (result.status === 0 ? 0 : counts.failed === 0 ? 1 : 0);
const skipped = counts.skipped > 0 ? `, ${counts.skipped} skipped` : '';
console.log(`${counts.passed} passed, ${failed} failed${skipped}`);
process.exit(result.status === 0 && failed === 0 ? 0 : 1);
