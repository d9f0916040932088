import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  FEATURE_ADD_CLUSTER_TRUST_BUNDLE,
  FEATURE_ADD_IMG_PULL_SECRET,
  FEATURE_ALL,
  FEATURE_ALTER_IMG_REGISTRY,
  FEATURE_SET_FIPS_MODE,
} from '../../../../src/api/webhook-features.js';
import { API_NOT_SERVED, trustBundleMount } from '../../../../src/api/trust-bundle-capability.js';
import { CTB_HASH_ANNOTATION } from '../../../../src/api/trust-stamp.js';
import { ESCAPED_REPAIR_ANNOTATION, readEscaped, writeEscaped } from '../../../../src/api/escaped-pods.js';
import { RESTART_OPT_OUT_ANNOTATION } from '../../../../src/api/trust-stamp.js';
import { mutatePod } from '../../../../src/mutation/pipeline.js';
import type { Pod } from '../../../../src/mutation/pod.js';
import { MAX_CONTAINERS } from '../../../../src/mutation/pod-size.js';
import {
  escapeReasons,
  isCounted,
  type EscapeContext,
} from '../../../../src/runtime-agent/escaped-pods/escape-decision.js';
import { repairAction } from '../../../../src/runtime-agent/escaped-pods/escaped-repair.js';
import { EscapedTally, MAX_REPAIR_OWNERS } from '../../../../src/runtime-agent/escaped-pods/escaped-tally.js';
import { deepFreeze, makeConfig } from '../../mutation/support.js';
import { escapedPodsReport } from '../../../support/escaped-pods-report.js';

const NS = 'team';
/** Every feature for namespace `team` through the config's namespace list. */
const config = makeConfig({ namespaceFeatures: { [NS]: [FEATURE_ALL] }, landscape: 'NS2' });
const context: EscapeContext = { config, revision: 'v1' };

const runningPod = (over: Partial<Pod['spec']> = {}, meta: Partial<Pod['metadata']> = {}): Pod =>
  deepFreeze({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'p', namespace: NS, uid: 'u1', ...meta },
    spec: { containers: [{ name: 'app', image: 'replace.me/app:1' }], ...over },
    status: { phase: 'Running' },
  });

/** The Pod as the webhook stores it under `c` (what a Pod admitted by us looks like). */
const admitted = (pod: Pod, c: EscapeContext = context): Pod =>
  deepFreeze(
    mutatePod({
      pod,
      operation: 'CREATE',
      namespace: { name: pod.metadata?.namespace ?? '' },
      config: c.config,
      pullSecretAvailable: true,
      trustBundleHash: 'h1',
      trustBundleMount: c.trustBundleMount,
      revision: c.revision,
    }).pod,
  );

describe('escapeReasons', () => {
  test('a Pod admitted without the webhook has every reason the set gives it', () => {
    assert.deepEqual(escapeReasons(runningPod(), context), [
      'unstamped',
      'registry',
      'pull-secret',
      'trust-bundle',
      'env',
    ]);
  });

  test('the Pod the webhook stored follows the set: no reason', () => {
    assert.deepEqual(escapeReasons(admitted(runningPod()), context), []);
  });

  test('a Pod admitted under an earlier set with the same effect follows the current one', () => {
    assert.deepEqual(escapeReasons(admitted(runningPod(), { ...context, revision: 'v0' }), context), []);
  });

  test('a Pod admitted under a set without a rewrite lacks only the rewrite of the current set', () => {
    const earlier = makeConfig({
      namespaceFeatures: { [NS]: [FEATURE_ALL] },
      landscape: 'NS2',
      overrides: {},
    });
    const pod = admitted(runningPod(), { config: earlier, revision: 'v0' });
    assert.deepEqual(escapeReasons(pod, context), ['registry']);
  });

  test('one reason at a time (a marked Pod lacking one thing)', () => {
    const only = (feature: string): EscapeContext => ({
      config: makeConfig({ namespaceFeatures: { [NS]: [feature as typeof FEATURE_ALL] } }),
    });
    const marks = { 'rt-bootstrapper.kyma-project.io/modified': 'true' };
    const pod = runningPod({}, { annotations: marks });
    assert.deepEqual(escapeReasons(pod, only(FEATURE_ALTER_IMG_REGISTRY)), ['registry']);
    assert.deepEqual(escapeReasons(pod, only(FEATURE_ADD_IMG_PULL_SECRET)), ['pull-secret']);
    assert.deepEqual(escapeReasons(pod, only(FEATURE_ADD_CLUSTER_TRUST_BUNDLE)), ['trust-bundle']);
    assert.deepEqual(escapeReasons(pod, only(FEATURE_SET_FIPS_MODE)), ['env']);
    // Without the marks, the same Pod was never admitted by us.
    assert.deepEqual(escapeReasons(runningPod(), only(FEATURE_SET_FIPS_MODE)), ['unstamped', 'env']);
  });

  test('the old "defaulted" mark counts as ours too', () => {
    const c: EscapeContext = { config: makeConfig({ namespaceFeatures: { [NS]: [FEATURE_SET_FIPS_MODE] } }) };
    const pod = runningPod({}, { annotations: { 'rt-bootstrapper.kyma-project.io/defaulted': 'true' } });
    assert.deepEqual(escapeReasons(pod, c), ['env']);
  });

  test('out of scope: a namespace the config does not select', () => {
    assert.deepEqual(escapeReasons(runningPod({}, { namespace: 'other' }), context), []);
  });

  test('in scope through the Namespace annotation', () => {
    const pod = runningPod({}, { namespace: 'other' });
    const reasons = escapeReasons(pod, { ...context, namespaceAnnotations: { [FEATURE_ALL]: 'true' } });
    assert.deepEqual(reasons, ['unstamped', 'registry', 'pull-secret', 'trust-bundle', 'env']);
  });

  test('a Pod that opted out of everything, or of one feature, is judged without it', () => {
    assert.deepEqual(escapeReasons(runningPod({}, { annotations: { [FEATURE_ALL]: 'false' } }), context), []);
    const noRegistry = runningPod({}, { annotations: { [FEATURE_ALTER_IMG_REGISTRY]: 'false' } });
    assert.deepEqual(escapeReasons(noRegistry, context), ['unstamped', 'pull-secret', 'trust-bundle', 'env']);
    // A feature's own key shadows `all` at the Pod's level.
    const shadow = runningPod(
      {},
      { annotations: { [FEATURE_ALL]: 'false', [FEATURE_ALTER_IMG_REGISTRY]: 'true' } },
    );
    assert.deepEqual(escapeReasons(shadow, context), ['unstamped', 'registry']);
  });

  test('nothing the set would change: not escaped, even without marks', () => {
    const c: EscapeContext = {
      config: makeConfig({ namespaceFeatures: { [NS]: [FEATURE_ALTER_IMG_REGISTRY] } }),
    };
    const pod = runningPod({ containers: [{ name: 'app', image: 'docker.io/library/nginx:1' }] });
    assert.deepEqual(escapeReasons(pod, c), []);
  });

  test('init containers count for the registry', () => {
    const c: EscapeContext = {
      config: makeConfig({ namespaceFeatures: { [NS]: [FEATURE_ALTER_IMG_REGISTRY] } }),
    };
    const pod = runningPod({
      containers: [{ name: 'app', image: 'ghcr.io/app:1' }],
      initContainers: [{ name: 'init', image: 'replace.me/init:1' }],
    });
    assert.deepEqual(escapeReasons(pod, c), ['unstamped', 'registry']);
  });

  test('where the runtime cannot take the mount, no trust-bundle reason', () => {
    const c: EscapeContext = {
      config: makeConfig({ namespaceFeatures: { [NS]: [FEATURE_ADD_CLUSTER_TRUST_BUNDLE] } }),
      trustBundleMount: trustBundleMount({ api: API_NOT_SERVED, projection: 'unknown' }),
    };
    assert.deepEqual(escapeReasons(runningPod(), c), []);
  });

  test('a Pod on an older trust bundle is the restarter’s, not escaped', () => {
    const pod = admitted(runningPod());
    const older: Pod = deepFreeze({
      ...pod,
      metadata: {
        ...pod.metadata,
        annotations: { ...pod.metadata?.annotations, [CTB_HASH_ANNOTATION]: 'h0' },
      },
    });
    assert.deepEqual(escapeReasons(older, context), []);
  });

  test('a Pod too large for the webhook to mutate is not counted escaped', () => {
    const containers = Array.from({ length: MAX_CONTAINERS + 1 }, (_, i) => ({
      name: `c${i}`,
      image: 'replace.me/a:1',
    }));
    assert.deepEqual(escapeReasons(runningPod({ containers }), context), []);
  });

  test('a Pod with annotations: null is judged as one without', () => {
    const pod = deepFreeze({
      ...runningPod(),
      metadata: { name: 'p', namespace: NS, annotations: null },
    }) as unknown as Pod;
    assert.deepEqual(escapeReasons(pod, context), [
      'unstamped',
      'registry',
      'pull-secret',
      'trust-bundle',
      'env',
    ]);
  });
});

describe('isCounted', () => {
  const OWN = 'kyma-system';
  const ours = { 'app.kubernetes.io/name': 'rt-bootstrapper' };
  test('running Pods the registration covers', () => {
    assert.equal(isCounted(runningPod(), OWN), true);
  });
  test('not Pending, Succeeded or terminating ones', () => {
    for (const phase of ['Pending', 'Succeeded', 'Failed', 'Unknown'])
      assert.equal(isCounted({ ...runningPod(), status: { phase } }, OWN), false, phase);
    assert.equal(isCounted({ ...runningPod(), status: {} }, OWN), false);
    assert.equal(isCounted(runningPod({}, { deletionTimestamp: '2026-01-01T00:00:00Z' }), OWN), false);
  });
  test('not in kube-system, nor the webhook’s own Pods in its namespace (the registration skips both)', () => {
    assert.equal(isCounted(runningPod({}, { namespace: 'kube-system' }), OWN), false);
    assert.equal(isCounted(runningPod({}, { namespace: OWN, labels: ours }), OWN), false);
    assert.equal(isCounted(runningPod({}, { namespace: 'other-ns', labels: ours }), 'other-ns'), false);
    assert.equal(
      isCounted(runningPod({}, { namespace: OWN, labels: { 'app.kubernetes.io/name': 'other' } }), OWN),
      true,
    );
    assert.equal(isCounted(runningPod({}, { namespace: OWN }), OWN), true);
  });
  test('a tenant’s Pod labelled as ours elsewhere counts: the registration admits it', () => {
    assert.notEqual(NS, OWN);
    assert.equal(isCounted(runningPod({}, { labels: ours }), OWN), true);
    assert.equal(isCounted(runningPod({}, { namespace: 'default', labels: ours }), OWN), true);
  });
});

describe('EscapedTally', () => {
  const rs = (uid: string) => ({ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: `rs-${uid}`, uid });
  test('counts Pods once, reasons each, bare Pods, and owners once', () => {
    const t = new EscapedTally();
    t.add({ namespace: NS, owner: rs('a') }, ['unstamped', 'registry']);
    t.add({ namespace: NS, owner: rs('a') }, ['registry']);
    t.add({ namespace: NS, owner: undefined }, ['pull-secret']);
    t.add({ namespace: NS, owner: rs('b') }, []);
    const r = t.result();
    assert.equal(r.pods, 3);
    assert.equal(r.scanned, 4);
    assert.equal(r.bare, 1);
    assert.deepEqual(r.reasons, { unstamped: 1, registry: 2, 'pull-secret': 1 });
    assert.deepEqual(
      r.owners.map((o) => [o.owner.uid, o.pods]),
      [['a', 2]],
    );
    t.reset();
    assert.deepEqual(t.result(), { pods: 0, reasons: {}, bare: 0, scanned: 0, owners: [], ownersLeftOut: 0 });
  });
  test('keeps at most MAX_REPAIR_OWNERS owners, counting the rest', () => {
    const t = new EscapedTally();
    for (let i = 0; i < MAX_REPAIR_OWNERS + 3; i++)
      t.add({ namespace: NS, owner: rs(`u${i}`) }, ['registry']);
    const r = t.result();
    assert.equal(r.owners.length, MAX_REPAIR_OWNERS);
    assert.equal(r.ownersLeftOut, 3);
    assert.equal(r.pods, MAX_REPAIR_OWNERS + 3);
  });
});

describe('repairAction', () => {
  test('patch, once per set', () => {
    assert.equal(repairAction('Deployment', {}, 'v1'), 'patch');
    const repaired = {
      spec: { template: { metadata: { annotations: { [ESCAPED_REPAIR_ANNOTATION]: 'v1' } } } },
    };
    assert.equal(repairAction('Deployment', repaired, 'v1'), 'repaired-before');
    assert.equal(repairAction('Deployment', repaired, 'v2'), 'patch');
  });
  test('an owner or template opted out of restarts is left alone', () => {
    assert.equal(
      repairAction(
        'Deployment',
        { metadata: { annotations: { [RESTART_OPT_OUT_ANNOTATION]: 'false' } } },
        'v1',
      ),
      'opted-out',
    );
    assert.equal(
      repairAction(
        'StatefulSet',
        { spec: { template: { metadata: { annotations: { [RESTART_OPT_OUT_ANNOTATION]: 'false' } } } } },
        'v1',
      ),
      'opted-out',
    );
  });
  test('OnDelete StatefulSets and DaemonSets are not patched (a template change restarts nothing)', () => {
    assert.equal(
      repairAction('StatefulSet', { spec: { updateStrategy: { type: 'OnDelete' } } }, 'v1'),
      'on-delete',
    );
    assert.equal(
      repairAction('DaemonSet', { spec: { updateStrategy: { type: 'OnDelete' } } }, 'v1'),
      'on-delete',
    );
    assert.equal(
      repairAction('DaemonSet', { spec: { updateStrategy: { type: 'RollingUpdate' } } }, 'v1'),
      'patch',
    );
  });
});

describe('the report in the status ConfigMap', () => {
  const report = escapedPodsReport({ repair: true, restarted: 1 });
  test('round trip', () => {
    assert.deepEqual(readEscaped(writeEscaped(report)), report);
  });
  test('bounded before parsing, and malformed or out-of-bounds values are not read', () => {
    assert.equal(readEscaped(' '.repeat(4096) + writeEscaped(report)), undefined);
    assert.equal(readEscaped('{'), undefined);
    assert.equal(readEscaped(JSON.stringify({ ...report, pods: -1 })), undefined);
    assert.equal(readEscaped(JSON.stringify({ ...report, pods: 1e20 })), undefined);
    assert.equal(readEscaped(JSON.stringify({ ...report, reasons: { other: 1 } })), undefined);
    assert.equal(readEscaped(undefined), undefined);
  });
});
