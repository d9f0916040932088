// StrykerJS configuration for `npm run test:mutation` (scripts/mutation-test.mjs runs it once per
// module, with RTB_MUTATION_MODULE naming the module). Each module is mutated against its own unit
// tests only; files are named wherever their folder is, so a move does not drop them silently
// (a module whose files match nothing fails the run).

/** The pure core: each module's source files and its unit tests. */
export const MODULES = [
  {
    id: 'mutation',
    name: 'mutation',
    mutate: ['src/mutation/*.ts'],
    tests: ['test/unit/mutation/*.test.ts'],
  },
  {
    id: 'image',
    name: 'image',
    mutate: ['src/image/*.ts'],
    tests: ['test/unit/image/*.test.ts'],
  },
  {
    id: 'pki-plan',
    name: 'PKI plan',
    mutate: ['src/**/serving-secret-plan.ts', 'src/**/serving-secret-state.ts'],
    tests: [
      'test/unit/**/serving-secret-state.test.ts',
      'test/unit/**/serving-secret-plan.test.ts',
      'test/unit/**/serving-secret-year.test.ts',
    ],
  },
  {
    id: 'restart-plan',
    name: 'restart plan',
    mutate: ['src/**/restart-plan.ts', 'src/**/workload-decision.ts', 'src/**/pod-facts.ts'],
    tests: ['test/unit/**/restart-plan.test.ts', 'test/unit/**/workload-pacing.test.ts'],
  },
  {
    id: 'wave-planner',
    name: 'wave planner',
    mutate: ['src/**/wave-planner.ts', 'src/**/wave-assignment.ts'],
    tests: [
      'test/unit/**/wave-planner*.test.ts',
      'test/unit/**/workload-gate.test.ts',
      'test/unit/**/wave-assignment.test.ts',
    ],
  },
  {
    id: 'shard-decision',
    name: 'shard decision',
    mutate: ['src/**/shard-view.ts', 'src/**/rendezvous-hash.ts'],
    tests: ['test/unit/**/shard-view.test.ts', 'test/unit/**/rendezvous-hash.test.ts'],
  },
];

const id = process.env.RTB_MUTATION_MODULE ?? '';
const module = MODULES.find((m) => m.id === id);
if (module === undefined && id !== '') throw new Error(`RTB_MUTATION_MODULE: no module ${id}`);
const dir = `reports/mutation/${id || 'all'}`;

/** @type {import('@stryker-mutator/api/core').PartialStrykerOptions} */
export default {
  testRunner: 'tap',
  tap: {
    testFiles: module ? module.tests : MODULES.flatMap((m) => m.tests),
    nodeArgs: ['--import', 'tsx'],
  },
  mutate: module ? module.mutate : MODULES.flatMap((m) => m.mutate),
  // The sandbox holds only what the unit tests load.
  ignorePatterns: ['/*', '!/src', '!/test', '!/package.json', '!/tsconfig.json'],
  // Each mutant runs only the test files that reached it.
  coverageAnalysis: 'perTest',
  // Mutants whose code and tests did not change keep their last result (`-- --force` retests all).
  incremental: true,
  incrementalFile: `${dir}/incremental.json`,
  concurrency: Number(process.env.RTB_MUTATION_CONCURRENCY ?? 2),
  // On top of 1.5 times the measured run: a test file can take seconds just to start on a busy
  // machine, and a mutant must not count as detected (timed out) only because the machine was slow.
  timeoutMS: 10000,
  reporters: ['progress-append-only', 'clear-text', 'html', 'json'],
  clearTextReporter: { allowEmojis: false, logTests: false },
  htmlReporter: { fileName: `${dir}/mutation.html` },
  jsonReporter: { fileName: `${dir}/mutation.json` },
  tempDirName: '.stryker-tmp',
  cleanTempDir: 'always',
};
