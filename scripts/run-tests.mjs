#!/usr/bin/env node
// Runs the whole test suite: builds (or reuses) the real control plane once, runs every
// test file under node's test runner, and ends with the line CI reads: `N passed, N failed`.
//
// First, for a whole run (or one with end-to-end files), the host's packages: installed when
// missing where it can, else it stops saying what to run (./host-setup.ts).
//
// Two phases, one after the other: static, unit and integration files (two at a time), then the
// end-to-end files under test/e2e (a real node each: kubelet, containerd, Pods from the rtb
// image; docs/node.md). They run one at a time by default, after everything else: a node and
// its Pods take most of a 2-core machine. `--unit` runs the unit tests only; `--e2e` the
// end-to-end files only.
//
// Files marked `// test-matrix: kubernetes` (scripts/test-matrix.ts) leave the first phase and run
// once per Kubernetes minor of the matrix, each run with RTB_TEST_KUBERNETES set and named in its
// summary line (docs/kubernetes-versions.md).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { tsImport } from 'tsx/esm/api';

const root = new URL('..', import.meta.url).pathname;
const args = process.argv.slice(2);
const unitOnly = args.includes('--unit');
const e2eOnly = args.includes('--e2e');
const filters = args.filter((a) => !a.startsWith('--'));
const started = Date.now();

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

function select(dirs) {
  let files = dirs.flatMap((d) => findTests(join(root, d))).map((f) => relative(root, f));
  if (filters.length > 0) files = files.filter((f) => filters.some((flt) => f.includes(flt)));
  return files;
}

const mainFiles = e2eOnly
  ? []
  : select(unitOnly ? ['test/unit'] : ['test/static', 'test/unit', 'test/integration']);
const e2eFiles = unitOnly ? [] : select(['test/e2e']);
if (mainFiles.length + e2eFiles.length === 0) {
  console.error('run-tests: no test files matched');
  process.exit(2);
}

function fail(message) {
  console.error(`run-tests: ${message}`);
  console.log('0 passed, 1 failed');
  process.exit(1);
}

const matrix = await tsImport('./test-matrix.ts', import.meta.url);
let plan;
try {
  plan = matrix.planMatrix(
    mainFiles.map((path) => ({ path, source: readFileSync(join(root, path), 'utf8') })),
    matrix.matrixVersions(process.env),
  );
} catch (error) {
  fail(error instanceof Error ? error.message : String(error));
}

/** `rtb control-plane <what>`, before any test starts, so no test timeout covers a cold build. */
function prepare(what, hint = '') {
  const step = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'control-plane', what], {
    cwd: root,
    stdio: 'inherit',
  });
  if (step.status !== 0) fail(`rtb control-plane ${what} failed (see above)${hint}`);
}

// The host's Debian packages (scripts/install-node-host.sh; the node, the image and the monitoring
// tests need them), before a whole run or one with end-to-end files: checked without apt, installed
// where this process is root (or has sudo without a password), else named with the command to run.
if (!unitOnly && (filters.length === 0 || e2eFiles.length > 0)) {
  const host = await tsImport('./host-setup.ts', import.meta.url);
  const action = host.decideHostSetup(host.hostFacts(root));
  if (action.kind === 'stop') fail(action.message);
  if (action.kind === 'unknown') console.error('run-tests: no dpkg here: the host packages are not checked');
  if (action.kind === 'install') {
    const command = action.command.join(' ');
    console.error(`run-tests: this host lacks ${action.packages.join(' ')}; installing them: ${command}`);
    const step = spawnSync(action.command[0], action.command.slice(1), { cwd: root, stdio: 'inherit' });
    if (step.status !== 0) fail(`${command} failed (see above)`);
  }
}

if (!unitOnly) {
  prepare('build');
  if (e2eFiles.length > 0) {
    // Root and the host's packages (scripts/install-node-host.sh): said once, not by every e2e test.
    prepare('host', ': the end-to-end tests (test/e2e) need a node; `npm run test:unit` needs none');
    prepare('node');
    prepare('image');
  }
}

/** Runs files under node's test runner; returns the counts and whether the runner exited cleanly. */
function runPhase(files, concurrency, env = {}) {
  const outDir = mkdtempSync(join(tmpdir(), 'rtb-tests-'));
  const countsFile = join(outDir, 'counts.json');
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
    { cwd: root, stdio: 'inherit', env: { ...process.env, RTB_TEST_RUN: '1', ...env } },
  );
  let counts = { passed: 0, failed: 1, skipped: 0 };
  try {
    counts = JSON.parse(readFileSync(countsFile, 'utf8'));
  } catch {
    console.error('run-tests: the test runner left no counts');
  }
  rmSync(outDir, { recursive: true, force: true });
  const failed = counts.failed + (result.status === 0 ? 0 : counts.failed === 0 ? 1 : 0);
  return { passed: counts.passed, failed, skipped: counts.skipped };
}

const total = { passed: 0, failed: 0, skipped: 0 };
const concurrency = process.env.RTB_TEST_CONCURRENCY ?? '2';
const phases = [
  { files: plan.plain, concurrency, name: unitOnly ? 'unit' : 'static, unit, integration' },
  ...plan.runs.map((run) => ({
    files: run.files,
    concurrency,
    name: `on Kubernetes ${run.kubernetes} (the matrix: RTB_TEST_KUBERNETES=${run.kubernetes})`,
    env: { RTB_TEST_KUBERNETES: run.kubernetes },
  })),
  { files: e2eFiles, concurrency: process.env.RTB_E2E_CONCURRENCY ?? '1', name: 'end to end (test/e2e)' },
];
const failedPhases = [];
for (const phase of phases) {
  if (phase.files.length === 0) continue;
  if (phase.env) console.error(`run-tests: ${phase.name}: ${phase.files.join(' ')}`);
  const phaseStarted = Date.now();
  const counts = runPhase(phase.files, phase.concurrency, phase.env);
  const seconds = ((Date.now() - phaseStarted) / 1000).toFixed(0);
  console.error(`run-tests: ${phase.name}: ${counts.passed} passed, ${counts.failed} failed in ${seconds} s`);
  if (counts.failed > 0) failedPhases.push(`${counts.failed} failed in the phase ${phase.name}`);
  total.passed += counts.passed;
  total.failed += counts.failed;
  total.skipped += counts.skipped;
}
for (const line of failedPhases) console.error(`run-tests: ${line}`);
console.error(`run-tests: ${((Date.now() - started) / 1000).toFixed(0)} s in all`);
const skipped = total.skipped > 0 ? `, ${total.skipped} skipped` : '';
console.log(`${total.passed} passed, ${total.failed} failed${skipped}`);
process.exit(total.failed === 0 ? 0 : 1);
