#!/usr/bin/env node
// Mutation testing of the pure core (docs/mutation-testing.md): runs StrykerJS once per module of
// scripts/stryker.config.mjs (each module's files against its own unit tests), then prints the
// mutation score of each module and fails when one is below the target.
//
//   npm run test:mutation                      every module
//   npm run test:mutation -- image wave-planner  the modules named (ids of the config)
//   npm run test:mutation -- --force           ignore the incremental results, test every mutant
//   npm run test:mutation -- --scores          only print the table of the last reports
//
// Property tests run 100 cases per property here (RTB_PROPERTY_RUNS; 1,000 in `npm test`): every
// surviving mutant runs its test files again. The PKI plan's year simulation runs once over 90 days
// (RTB_SIMULATED_DAYS, RTB_SIMULATION_RUNS; three runs over 365 days in `npm test`).
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { MODULES } from './stryker.config.mjs';

const root = new URL('..', import.meta.url).pathname;
const TARGET = 85;

const args = process.argv.slice(2);
const scoresOnly = args.includes('--scores');
const strykerArgs = args.filter((a) => a.startsWith('--') && a !== '--scores');
const named = args.filter((a) => !a.startsWith('--'));
for (const id of named) {
  if (!MODULES.some((m) => m.id === id)) {
    console.error(`mutation-test: no module ${id} (modules: ${MODULES.map((m) => m.id).join(', ')})`);
    process.exit(2);
  }
}
const modules = named.length > 0 ? named.map((id) => MODULES.find((m) => m.id === id)) : MODULES;

const started = Date.now();
if (!scoresOnly) {
  for (const m of modules) {
    const moduleStarted = Date.now();
    console.log(`mutation-test: ${m.name}`);
    const run = spawnSync(
      process.execPath,
      [
        join(root, 'node_modules/@stryker-mutator/core/bin/stryker.js'),
        'run',
        'scripts/stryker.config.mjs',
        ...strykerArgs,
      ],
      {
        cwd: root,
        stdio: 'inherit',
        env: {
          RTB_PROPERTY_RUNS: '100',
          RTB_SIMULATED_DAYS: '90',
          RTB_SIMULATION_RUNS: '1',
          ...process.env,
          RTB_MUTATION_MODULE: m.id,
        },
      },
    );
    const seconds = ((Date.now() - moduleStarted) / 1000).toFixed(0);
    if (run.status !== 0) {
      console.error(
        `mutation-test: ${m.name}: stryker exited with ${run.status ?? run.signal} after ${seconds} s`,
      );
      process.exit(1);
    }
    console.log(`mutation-test: ${m.name}: ${seconds} s`);
  }
}

const DETECTED = new Set(['Killed', 'Timeout']);
const below = [];
const rows = [];
for (const m of modules) {
  const file = join(root, `reports/mutation/${m.id}/mutation.json`);
  if (!existsSync(file)) {
    below.push(`${m.name} (no report)`);
    continue;
  }
  const report = JSON.parse(readFileSync(file, 'utf8'));
  const row = { name: m.name, killed: 0, timeout: 0, survived: 0, noCoverage: 0, files: 0 };
  for (const f of Object.values(report.files)) {
    row.files++;
    for (const mutant of f.mutants) {
      if (mutant.status === 'Timeout') row.timeout++;
      if (DETECTED.has(mutant.status)) row.killed++;
      else if (mutant.status === 'Survived') row.survived++;
      else if (mutant.status === 'NoCoverage') row.noCoverage++;
    }
  }
  const valid = row.killed + row.survived + row.noCoverage;
  row.score = valid === 0 ? 0 : (100 * row.killed) / valid;
  if (row.files === 0 || valid === 0) below.push(`${m.name} (no mutants: its files moved?)`);
  else if (row.score < TARGET) below.push(m.name);
  rows.push(row);
}

console.log('');
console.log('| module         | score   | killed (of them timed out) | survived | no coverage |');
console.log('| -------------- | ------- | -------------------------- | -------- | ----------- |');
for (const r of rows) {
  const killed = `${r.killed} (${r.timeout})`;
  console.log(
    `| ${r.name.padEnd(14)} | ${`${r.score.toFixed(2)} %`.padStart(7)} | ${killed.padStart(26)} | ${String(r.survived).padStart(8)} | ${String(r.noCoverage).padStart(11)} |`,
  );
}
if (!scoresOnly) console.log(`mutation-test: ${((Date.now() - started) / 1000).toFixed(0)} s in all`);
if (below.length > 0) {
  console.error(`mutation-test: below ${TARGET} %: ${below.join(', ')}`);
  process.exit(1);
}
console.log(`mutation-test: every module at ${TARGET} % or better`);
