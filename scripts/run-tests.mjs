#!/usr/bin/env node
// Runs the whole test suite: builds (or reuses) the real control plane once, runs every
// test file under node's test runner, and ends with the line CI reads: `N passed, N failed`.
//
// First, for a whole run (or one with end-to-end files), the host's packages: installed when
// missing where it can, else it stops saying what to run (./host-setup.ts).
//
// Two lanes run side by side (./test-schedule.ts): the main lane (the static check, the unit
// files together, each integration file, each matrix file on each minor), two jobs at a time
// (`RTB_TEST_CONCURRENCY`), and the end-to-end lane under test/e2e (a real node each: kubelet,
// containerd, Pods from the rtb image; docs/node.md), which starts once its node and image are
// built (meanwhile the main lane runs). In the end-to-end lane one file at a time works a node,
// and while one does, a CPU-bound job (the static check, the unit files: `// test-schedule: cpu`,
// never two at once) runs with no other main job beside it;
// files marked `// test-schedule: early` (they mostly wait for the kubelet's 5-minute bundle cache)
// start first and run beside it, up to `RTB_E2E_CONCURRENCY` (2) files at once
// (`RTB_E2E_BESIDE=early`: the unmarked ones wait for the main lane to end). In each lane
// the longest job of the last run starts first (their durations: the cache folder's
// test-durations.json). Each job's output is printed whole when it ends. `--unit` runs the unit
// tests only; `--e2e` the end-to-end files only.
//
// Files marked `// test-matrix: kubernetes` (scripts/test-matrix.ts) leave the first phase and run
// once per Kubernetes minor of the matrix, each run with RTB_TEST_KUBERNETES set and named in its
// summary line (docs/kubernetes-versions.md).
import { spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
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

const source = (path) => readFileSync(join(root, path), 'utf8');
const matrix = await tsImport('./test-matrix.ts', import.meta.url);
const schedule = await tsImport('./test-schedule.ts', import.meta.url);
const { cacheRoot } = await tsImport('../src/envtest/cache-root.ts', import.meta.url);
const failOpenTally = await tsImport('../src/envtest/fail-open-tally.ts', import.meta.url);
let plan;
try {
  plan = matrix.planMatrix(
    mainFiles.map((path) => ({ path, source: source(path) })),
    matrix.matrixVersions(process.env),
  );
} catch (error) {
  fail(error instanceof Error ? error.message : String(error));
}

/** `rtb control-plane <what>` as a child, its output buffered; resolves to whether it succeeded. */
function prepareAsync(what) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'control-plane', what], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const out = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => out.push(d));
    child.on('close', (code) => {
      process.stderr.write(Buffer.concat(out));
      resolve(code === 0);
    });
  });
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

// The control plane before any job; the node and the image before the first end-to-end job only,
// built while the main lane runs.
let e2eReady = Promise.resolve('');
if (!unitOnly) {
  prepare('build');
  if (e2eFiles.length > 0) {
    // Root and the host's packages (scripts/install-node-host.sh): said once, not by every e2e test.
    prepare('host', ': the end-to-end tests (test/e2e) need a node; `npm run test:unit` needs none');
    e2eReady = (async () => {
      for (const what of ['node', 'image']) {
        if (!(await prepareAsync(what))) return `rtb control-plane ${what} failed (see above)`;
      }
      return '';
    })();
  }
}

const widths = {
  main: Number(process.env.RTB_TEST_CONCURRENCY ?? '2'),
  e2e: Number(process.env.RTB_E2E_CONCURRENCY ?? '2'),
};
const plainName = unitOnly ? 'unit' : 'static, unit, integration';
const matrixName = (kubernetes) =>
  `on Kubernetes ${kubernetes} (the matrix: RTB_TEST_KUBERNETES=${kubernetes})`;
const e2eName = 'end to end (test/e2e)';
/** A job of one file, its markers read from its text. */
const fileJob = (f, { id = f, phase, lane, env = {} }) => {
  const text = source(f);
  const early = schedule.hasMarker(text, schedule.EARLY_MARKER);
  const cpuBound = schedule.hasMarker(text, schedule.CPU_MARKER);
  return { id, phase, lane, files: [f], early, cpuBound, env };
};
const onPurpose = (path) => source(path).includes(failOpenTally.FAIL_OPEN_MARKER);
/** Failed-open admission calls per job, for the summary at the end. */
const failOpenByJob = new Map();

// The unit files run as one job in one process (each takes a second or less: a process per file,
// loading tsx and the modules again, cost three times what the tests run), beside the others when
// there are others. They share no state but what each file sets up for itself.
const unit = plan.plain.filter((f) => f.startsWith('test/unit/'));
// Named by its count: a run of a few unit files must not make a whole run start them last.
const unitId = `test/unit (${unit.length} files)`;
const jobs = [
  ...(unit.length > 0
    ? [{ id: unitId, phase: plainName, lane: 'main', files: unit, early: false, cpuBound: true, env: {} }]
    : []),
  ...plan.plain
    .filter((f) => !f.startsWith('test/unit/'))
    .map((f) => fileJob(f, { phase: plainName, lane: 'main' })),
  ...plan.runs.flatMap((run) =>
    run.files.map((f) =>
      fileJob(f, {
        id: `${f}@${run.kubernetes}`,
        phase: matrixName(run.kubernetes),
        lane: 'main',
        env: { RTB_TEST_KUBERNETES: run.kubernetes },
      }),
    ),
  ),
  ...e2eFiles.map((f) => fileJob(f, { phase: e2eName, lane: 'e2e' })),
];
for (const run of plan.runs)
  console.error(`run-tests: ${matrixName(run.kubernetes)}: ${run.files.join(' ')}`);

const durationsFile = join(cacheRoot(process.env), 'test-durations.json');
let durations = {};
try {
  durations = JSON.parse(readFileSync(durationsFile, 'utf8'));
} catch {
  // First run here: the given order.
}

/** The phases' summaries, in the order of the old phases. */
const phaseOrder = [plainName, ...plan.runs.map((r) => matrixName(r.kubernetes)), e2eName];
const phases = new Map(
  phaseOrder
    .filter((name) => jobs.some((j) => j.phase === name))
    .map((name) => [
      name,
      {
        jobs: jobs.filter((j) => j.phase === name).length,
        done: 0,
        passed: 0,
        failed: 0,
        skipped: 0,
        first: 0,
        last: 0,
      },
    ]),
);

const children = new Set();
/** Runs one job under node's test runner, its output buffered; resolves to its counts. */
function runJob(job) {
  const outDir = mkdtempSync(join(tmpdir(), 'rtb-tests-'));
  const countsFile = join(outDir, 'counts.json');
  const tallyFile = join(outDir, 'fail-open.jsonl');
  // The unit files through one module that imports them all (see above).
  const entry = join(outDir, 'unit.test.mts');
  if (job.id === unitId)
    writeFileSync(
      entry,
      job.files.map((f) => `import ${JSON.stringify(pathToFileURL(join(root, f)).href)};\n`).join(''),
    );
  return new Promise((resolve) => {
    const child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        '--test',
        '--test-concurrency=1',
        '--test-timeout=600000',
        '--test-reporter=spec',
        '--test-reporter-destination=stdout',
        '--test-reporter=./scripts/count-reporter.mjs',
        `--test-reporter-destination=${countsFile}`,
        ...(job.id === unitId ? [entry] : job.files),
      ],
      {
        cwd: root,
        stdio: ['ignore', 'pipe', 'pipe'],
        env: { ...process.env, RTB_TEST_RUN: '1', RTB_FAIL_OPEN_TALLY: tallyFile, ...job.env },
      },
    );
    children.add(child);
    const out = [];
    child.stdout.on('data', (d) => out.push(d));
    child.stderr.on('data', (d) => out.push(d));
    // A process the job left behind may hold its output open: 5 s after the exit, it ends anyway.
    child.on('exit', (code) => setTimeout(() => child.emit('close', code), 5_000));
    let closed = false;
    child.on('close', (code) => {
      if (closed) return;
      closed = true;
      child.stdout.destroy();
      child.stderr.destroy();
      children.delete(child);
      let counts = { passed: 0, failed: 1, skipped: 0 };
      let note = '';
      try {
        counts = JSON.parse(readFileSync(countsFile, 'utf8'));
      } catch {
        note = 'run-tests: the test runner left no counts\n';
      }
      let failOpens = {};
      try {
        failOpens = failOpenTally.sumFailOpens(readFileSync(tallyFile, 'utf8'));
      } catch {
        // No API server of the job saw a call fail open.
      }
      rmSync(outDir, { recursive: true, force: true });
      let failed = counts.failed + (code === 0 ? 0 : counts.failed === 0 ? 1 : 0);
      const failOpen = Object.values(failOpens).reduce((a, b) => a + b, 0);
      // On a real node a call that failed open stored a Pod unmutated: only on purpose.
      if (failOpen > 0 && job.lane === 'e2e' && !job.files.some((f) => onPurpose(f))) {
        failed += 1;
        note += `run-tests: ${failOpen} admission webhook calls failed open (${JSON.stringify(failOpens)}), and the file does not say \`${failOpenTally.FAIL_OPEN_MARKER}\`\n`;
      }
      resolve({
        passed: counts.passed,
        failed,
        skipped: counts.skipped,
        output: Buffer.concat(out),
        note,
        failOpen,
      });
    });
  });
}

for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) {
  process.on(signal, () => {
    for (const child of children) child.kill(signal);
    process.exit(130);
  });
}

// RTB_E2E_BESIDE=early: only the early end-to-end files run beside the main lane, the others after
// it (a node then has the machine to itself, as before the lanes).
const besideAll = process.env.RTB_E2E_BESIDE !== 'early';
const mainLeft = () => [...waiting, ...running].some((j) => j.lane === 'main');
const total = { passed: 0, failed: 0, skipped: 0 };
const failedPhases = [];
let waiting = [...schedule.orderJobs(jobs, durations)];
const running = [];
let e2eState = e2eFiles.length > 0 ? 'building' : 'ready';
let wake = () => {};
void e2eReady.then((problem) => {
  if (problem) {
    // No end-to-end job can run: one failure says why.
    console.error(`run-tests: ${problem}`);
    waiting = waiting.filter((j) => j.lane !== 'e2e');
    const phase = phases.get(e2eName);
    if (phase) {
      Object.assign(phase, { done: phase.jobs, failed: 1, first: Date.now(), last: Date.now() });
      report(e2eName, phase);
    }
  }
  e2eState = 'ready';
  wake();
});

function report(name, phase) {
  const seconds = ((phase.last - phase.first) / 1000).toFixed(0);
  console.error(`run-tests: ${name}: ${phase.passed} passed, ${phase.failed} failed in ${seconds} s`);
  if (phase.failed > 0) failedPhases.push(`${phase.failed} failed in the phase ${name}`);
  total.passed += phase.passed;
  total.failed += phase.failed;
  total.skipped += phase.skipped;
}

async function start(job) {
  running.push(job);
  const phase = phases.get(job.phase);
  const jobStarted = Date.now();
  if (phase.first === 0) phase.first = jobStarted;
  const result = await runJob(job);
  const seconds = (Date.now() - jobStarted) / 1000;
  running.splice(running.indexOf(job), 1);
  if (result.failed === 0) durations[job.id] = Math.round(seconds);
  const env = Object.entries(job.env)
    .map(([k, v]) => `${k}=${v} `)
    .join('');
  const what = job.files.length === 1 ? job.files[0] : job.id;
  if (job.lane === 'e2e' || result.failOpen > 0) failOpenByJob.set(job, result.failOpen);
  const failOpenNote = result.failOpen > 0 ? `, ${result.failOpen} webhook calls failed open` : '';
  process.stdout.write(
    `\n── ${env}${what}: ${result.passed} passed, ${result.failed} failed in ${seconds.toFixed(0)} s${failOpenNote}\n`,
  );
  process.stdout.write(result.output);
  process.stdout.write(result.note);
  Object.assign(phase, {
    done: phase.done + 1,
    passed: phase.passed + result.passed,
    failed: phase.failed + result.failed,
    skipped: phase.skipped + result.skipped,
    last: Date.now(),
  });
  if (phase.done === phase.jobs) report(job.phase, phase);
  wake();
}

await new Promise((resolve) => {
  wake = () => {
    for (;;) {
      const job = schedule.nextJob(
        waiting,
        running,
        widths,
        (job) => job.lane === 'main' || (e2eState === 'ready' && (besideAll || job.early || !mainLeft())),
      );
      if (!job) break;
      waiting = waiting.filter((j) => j !== job);
      void start(job);
    }
    if (waiting.length === 0 && running.length === 0 && e2eState === 'ready') resolve();
  };
  wake();
});

try {
  mkdirSync(dirname(durationsFile), { recursive: true });
  writeFileSync(durationsFile, `${JSON.stringify(durations, null, 2)}\n`);
} catch {
  // Only the next run's order depends on it.
}
if (failOpenByJob.size > 0) {
  console.error(
    `run-tests: admission webhook calls that failed open (${failOpenTally.FAIL_OPEN_METRIC}), per test file:`,
  );
  for (const [job, n] of [...failOpenByJob].sort(([a], [b]) => a.id.localeCompare(b.id))) {
    const why = n > 0 && job.files.some((f) => onPurpose(f)) ? ' (on purpose)' : '';
    console.error(`run-tests:   ${String(n).padStart(4)}  ${job.id}${why}`);
  }
}
for (const line of failedPhases) console.error(`run-tests: ${line}`);
console.error(`run-tests: ${((Date.now() - started) / 1000).toFixed(0)} s in all`);
const skipped = total.skipped > 0 ? `, ${total.skipped} skipped` : '';
console.log(`${total.passed} passed, ${total.failed} failed${skipped}`);
process.exit(total.failed === 0 ? 0 : 1);
