import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createRegistryRewriter } from '../../../../src/image/registry-rewrite.js';
import type {
  CheckedImage,
  CheckImagesResult,
} from '../../../../src/runtime-agent/preflight/preflight-check.js';
import { doneReport } from '../../../../src/runtime-agent/preflight/preflight-report.js';
import { confirmFindings, stableTargets } from '../../../../src/runtime-agent/preflight/stable-check.js';
import type { ProbeResult } from '../../../../src/runtime-agent/preflight/registry-probe.js';

const checked = (image: string, target: string, result: ProbeResult): CheckedImage => ({
  image,
  target,
  outcome: { result },
});

// The candidate moves Docker Hub to a mirror; the stable set sent it to another one.
const candidate: CheckImagesResult = {
  checked: [
    checked('docker.io/library/app:1', 'mirror.new/hub/library/app:1', 'missing'),
    checked('docker.io/someone/private:1', 'mirror.new/hub/someone/private:1', 'missing'),
    checked('docker.io/library/ok:1', 'mirror.new/hub/library/ok:1', 'ok'),
    checked('docker.io/library/refused:1', 'mirror.new/hub/library/refused:1', 'refused'),
    checked('docker.io/library/far:1', 'mirror.new/hub/library/far:1', 'unreachable'),
  ],
  notChecked: 1,
  outOfTime: false,
};

describe('preflight: a finding counts only where the stable set resolves the image (DESIGN §14)', () => {
  test('the stable locations of the findings alone, once each', () => {
    const rewrite = createRegistryRewriter({ 'docker.io': 'mirror.old/hub' });
    assert.deepEqual(stableTargets(candidate, rewrite), [
      { image: 'docker.io/library/app:1', target: 'mirror.old/hub/library/app:1' },
      { image: 'docker.io/someone/private:1', target: 'mirror.old/hub/someone/private:1' },
      { image: 'docker.io/library/refused:1', target: 'mirror.old/hub/library/refused:1' },
    ]);
    const none = createRegistryRewriter({});
    assert.equal(
      stableTargets(candidate, none)[0]?.target,
      'docker.io/library/app:1',
      'not moved: the origin',
    );
  });

  test('an image the stable set excludes is probed where it is (its origin)', () => {
    const rewrite = createRegistryRewriter({ 'docker.io': 'mirror.old/hub' }, ['docker.io/someone/*']);
    assert.deepEqual(
      stableTargets(candidate, rewrite).map((t) => t.target),
      ['mirror.old/hub/library/app:1', 'docker.io/someone/private:1', 'mirror.old/hub/library/refused:1'],
    );
  });

  test("an image the stable location does not serve is the tenant's own matter: skipped, no finding", () => {
    const stable = [
      checked('docker.io/library/app:1', 'mirror.old/hub/library/app:1', 'ok'),
      checked('docker.io/someone/private:1', 'mirror.old/hub/someone/private:1', 'refused'),
      // refused:1 was not probed (the budget ended): not a finding either
    ];
    const result = confirmFindings(candidate, stable);
    assert.deepEqual(
      result.checked.map((c) => `${c.outcome.result} ${c.image}`),
      ['missing docker.io/library/app:1', 'ok docker.io/library/ok:1', 'unreachable docker.io/library/far:1'],
    );
    assert.equal(result.notChecked, 3);
    const report = doneReport('v2', { skipped: 0 }, result, new Date(0), new Date(1));
    assert.equal(report.missing, 1);
    assert.equal(report.refused, 0);
    assert.equal(report.skipped, 3);
    assert.equal(report.checked, 3);
  });

  test('without a finding nothing is probed again', () => {
    const clean: CheckImagesResult = { checked: [candidate.checked[2]!], notChecked: 0, outOfTime: false };
    assert.deepEqual(stableTargets(clean, createRegistryRewriter({})), []);
    assert.deepEqual(confirmFindings(clean, []), clean);
  });
});
