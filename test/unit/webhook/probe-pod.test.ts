import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FEATURE_ALL } from '../../../src/api/webhook-features.js';
import { APP_NAME, APP_NAME_LABEL } from '../../../src/api/runtime-names.js';
import {
  PROBE_BUNDLE,
  PROBE_VOLUME,
  projectionFinding,
  projectionProbePod,
} from '../../../src/webhook/trust-capability/probe-pod.js';

interface ProbePod {
  metadata: { namespace: string; labels: Record<string, string>; annotations: Record<string, string> };
  spec: {
    automountServiceAccountToken: boolean;
    securityContext: { runAsNonRoot: boolean; seccompProfile: { type: string } };
    containers: {
      securityContext: { allowPrivilegeEscalation: boolean; capabilities: { drop: string[] } };
    }[];
    volumes: { name: string; projected: { sources: unknown[] } }[];
  };
}

describe('the projection probe Pod', () => {
  const pod = projectionProbePod('kyma-system') as unknown as ProbePod;

  test('our own webhook leaves it alone: opted out of everything, and the label our registration skips', () => {
    assert.equal(pod.metadata.namespace, 'kyma-system');
    assert.equal(pod.metadata.annotations[FEATURE_ALL], 'false');
    assert.equal(pod.metadata.labels[APP_NAME_LABEL], APP_NAME);
  });

  test('Pod Security restricted, no token', () => {
    assert.equal(pod.spec.automountServiceAccountToken, false);
    assert.equal(pod.spec.securityContext.runAsNonRoot, true);
    assert.equal(pod.spec.securityContext.seccompProfile.type, 'RuntimeDefault');
    for (const c of pod.spec.containers) {
      assert.equal(c.securityContext.allowPrivilegeEscalation, false);
      assert.deepEqual(c.securityContext.capabilities.drop, ['ALL']);
    }
  });

  test('what the answer says: kept, dropped (as the API server stores it), or unknown', () => {
    assert.equal(projectionFinding(pod), 'kept', 'the Pod as sent keeps its source');
    // What a 1.34 API server with ClusterTrustBundleProjection off answers (docs/trust-bundle-api.md).
    const dropped = {
      spec: { volumes: [{ name: PROBE_VOLUME, projected: { sources: [{}], defaultMode: 420 } }] },
    };
    assert.equal(projectionFinding(dropped), 'dropped');
    const other = {
      spec: {
        volumes: [
          { name: PROBE_VOLUME, projected: { sources: [{ clusterTrustBundle: { name: 'x', path: 'p' } }] } },
        ],
      },
    };
    assert.equal(projectionFinding(other), 'dropped', 'not our source');
    for (const unknown of [
      undefined,
      null,
      {},
      { spec: {} },
      { spec: { volumes: [] } },
      { spec: { volumes: [{ name: PROBE_VOLUME }] } },
    ])
      assert.equal(projectionFinding(unknown), 'unknown', JSON.stringify(unknown));
    assert.ok(JSON.stringify(pod).includes(PROBE_BUNDLE));
  });
});
