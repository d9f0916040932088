#!/usr/bin/env node
// Mutation testing of the pure core (docs/mutation-testing.md): runs StrykerJS with
// stryker.config.json (the modules it mutates and their unit tests), then prints the mutation
// score of each module from the JSON report and fails when one is below the target.
//
// Arguments go to `stryker run` (`npm run test:mutation -- --force` ignores the incremental
// file and tests every mutant again). `--scores` only prints the table of the last report.
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { basename, join } from 'node:path';

const root = new URL('..', import.meta.url).pathname;
const TARGET = 85;

/** The modules of the pure core, by the names of their files (wherever their folder is). */
const MODULES = [
  { name: 'mutation', match: (path) => path.startsWith('src/mutation/') },
  { name: 'image', match: (path) => path.startsWith('src/image/') },
  { name: 'PKI plan', files: ['serving-secret-plan.ts', 'serving-secret-state.ts'] },
  { name: 'restart plan', files: ['restart-plan.ts', 'workload-decision.ts', 'pod-facts.ts'] },
  { name: 'wave planner', files: ['wave-planner.ts', 'wave-assignment.ts'] },
  { name: 'shard decision', files: ['shard-view.ts', 'rendezvous-hash.ts'] },
];

const args = process.argv.slice(2);
const scoresOnly = args.includes('--scores');
let strykerStatus = 0;
if (!scoresOnly) {
  const started = Date.now();
  const run = spawnSync(
    process.execPath,
    [join(root, 'node_modules/@stryker-mutator/core/bin/stryker.js'), 'run', 'stryker.config.json', ...args],
    { cwd: root, stdio: 'inherit' },
  );
  strykerStatus = run.status ?? 1;
  console.log(`mutation-test: stryker took ${((Date.now() - started) / 1000).toFixed(0)} s`);
  if (strykerStatus !== 0) {
    console.error(`mutation-test: stryker exited with ${strykerStatus}`);
    process.exit(strykerStatus);
  }
}

const report = JSON.parse(readFileSync(join(root, 'reports/mutation/mutation.json'), 'utf8'));
const DETECTED = new Set(['Killed', 'Timeout']);
const rows = new Map(MODULES.map((m) => [m.name, { killed: 0, survived: 0, noCoverage: 0, files: [] }]));
for (const [path, file] of Object.entries(report.files)) {
  const module = MODULES.find((m) => (m.match ? m.match(path) : m.files.includes(basename(path))));
  const name = module?.name ?? path;
  if (!rows.has(name)) rows.set(name, { killed: 0, survived: 0, noCoverage: 0, files: [] });
  const row = rows.get(name);
  row.files.push(path);
  for (const mutant of file.mutants) {
    if (DETECTED.has(mutant.status)) row.killed++;
    else if (mutant.status === 'Survived') row.survived++;
    else if (mutant.status === 'NoCoverage') row.noCoverage++;
  }
}

const below = [];
console.log('');
console.log('| module         | score  | killed | survived | no coverage |');
console.log('| -------------- | ------ | ------ | -------- | ----------- |');
for (const [name, row] of rows) {
  const valid = row.killed + row.survived + row.noCoverage;
  const score = valid === 0 ? 100 : (100 * row.killed) / valid;
  if (score < TARGET) below.push(name);
  console.log(
    `| ${name.padEnd(14)} | ${`${score.toFixed(2)} %`.padStart(7)}| ${String(row.killed).padStart(6)} | ${String(row.survived).padStart(8)} | ${String(row.noCoverage).padStart(11)} |`,
  );
}
if (below.length > 0) {
  console.error(`mutation-test: below ${TARGET} %: ${below.join(', ')}`);
  process.exit(1);
}
console.log(`mutation-test: every module at ${TARGET} % or better`);
