// A node:test reporter that counts passed, failed and skipped tests (suites excluded) and
// writes the totals as JSON; scripts/run-tests.mjs prints them as CI's closing line.
export default async function* countReporter(source) {
  let passed = 0;
  let failed = 0;
  let skipped = 0;
  for await (const event of source) {
    if (event.type !== 'test:pass' && event.type !== 'test:fail') continue;
    if (event.data.details?.type === 'suite') continue;
    if (event.data.skip !== undefined || event.data.todo !== undefined) skipped++;
    else if (event.type === 'test:pass') passed++;
    else failed++;
  }
  yield JSON.stringify({ passed, failed, skipped });
}
