import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  API_NOT_SERVED,
  API_UNKNOWN,
  MOUNT,
  sameCapability,
  trustBundleMount,
  type ProjectionFinding,
} from '../../../src/api/trust-bundle-capability.js';

describe('the trust-bundle mount decision', () => {
  test('every finding: only no API or a dropped projection turn the mount off', () => {
    const apis = ['certificates.k8s.io/v1', 'certificates.k8s.io/v1beta1', API_NOT_SERVED, API_UNKNOWN];
    const projections: ProjectionFinding[] = ['kept', 'dropped', 'unknown'];
    assert.equal(trustBundleMount(undefined), MOUNT, 'not probed yet: as ever');
    for (const api of apis)
      for (const projection of projections) {
        const d = trustBundleMount({ api, projection });
        const label = `${api} ${projection}`;
        if (api === API_NOT_SERVED) {
          assert.ok(!d.mount, label);
          assert.equal(d.reason, 'api_not_served', label);
        } else if (projection === 'dropped') {
          assert.ok(!d.mount, label);
          assert.equal(d.reason, 'projection_dropped', label);
        } else assert.equal(d, MOUNT, label);
      }
  });

  test('the warnings say why and fit what kubectl shows in full (256 characters)', () => {
    for (const c of [
      { api: API_NOT_SERVED, projection: 'kept' as const },
      { api: 'certificates.k8s.io/v1', projection: 'dropped' as const },
    ]) {
      const d = trustBundleMount(c);
      assert.ok(!d.mount);
      assert.ok(d.warning.length <= 256, d.warning);
      assert.match(d.warning, /^rt-bootstrapper: trust bundle not mounted: /);
    }
  });

  test('findings compare by content', () => {
    const a = { api: 'certificates.k8s.io/v1', projection: 'kept' as const };
    assert.ok(sameCapability(a, { ...a }));
    assert.ok(!sameCapability(a, { ...a, detail: 'x' }));
    assert.ok(!sameCapability(a, undefined));
    assert.ok(sameCapability(undefined, undefined));
  });
});
