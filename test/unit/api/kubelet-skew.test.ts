import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  describeOldKubelets,
  kubeletReads,
  MAX_LINE_CHARS,
  NODE_POOL_LABEL,
  nodeKubeletOf,
  oldKubeletPools,
  parseKubeletVersion,
  unreadableNodes,
  type NodeKubelet,
} from '../../../src/api/kubelet-skew.js';
import { trustBundleMount, type TrustBundleCapability } from '../../../src/api/trust-bundle-capability.js';
import { readReport, reportData } from '../../../src/api/webhook-status.js';
import { mountsTrustBundle } from '../../../src/controller/direct/admission-policy-plan.js';
import { StatusBuilder } from '../../../src/controller/direct/status-builder.js';
import { recordProjection } from '../../../src/controller/direct/trust-projection-status.js';
import { nodeViewOf, withKubelets } from '../../../src/webhook/trust-capability/node-kubelets.js';

const node = (name: string, kubeletVersion: unknown, pool?: string): NodeKubelet =>
  nodeKubeletOf({
    metadata: { name, labels: pool === undefined ? {} : { [NODE_POOL_LABEL]: pool } },
    status: { nodeInfo: { kubeletVersion } },
  });

describe('kubelet versions and the ClusterTrustBundle API they read', () => {
  test('versions as kubelets report them parse to major and minor', () => {
    for (const [text, minor] of [
      ['v1.34.4', 34],
      ['v1.34.4-gke.1', 34],
      ['v1.35.2+k3s1', 35],
      ['1.37.0', 37],
      ['v1.37', 37],
      ['v1.36.0-rc.1', 36],
      ['v1.40.10_custom', 40],
    ] as const)
      assert.deepEqual(parseKubeletVersion(text), { major: 1, minor }, text);
  });

  test('anything else is not understood: garbage, control characters, numbers too long, huge strings', () => {
    for (const text of [
      '',
      'v',
      'latest',
      'v1',
      'v1.',
      'v1.x.2',
      'vv1.34.4',
      'V1.34.4',
      ' v1.34.4',
      'v1.34 ',
      'v1.34.4\n',
      'v1.34.4;rm -rf',
      'v1.34.4 (gke)',
      'v1.34é',
      'v12345.1.1',
      'v1.34567.0',
      'v1,34,4',
      `v1.34.${'4'.repeat(100)}`,
      `v1.34.4-${'a'.repeat(10_000_000)}`,
      'v1.34.4'.repeat(10),
    ])
      assert.equal(parseKubeletVersion(text), undefined, JSON.stringify(text.slice(0, 40)));
    for (const value of [undefined, null, 34, 1.34, {}, ['v1.34.4']])
      assert.equal(parseKubeletVersion(value), undefined, JSON.stringify(value));
  });

  test('which versions each minor reads: 1.33–1.36 v1beta1, 1.37–1.39 v1 then v1beta1, 1.40 v1', () => {
    assert.deepEqual(kubeletReads({ major: 1, minor: 32 }), []);
    for (const minor of [33, 34, 35, 36]) assert.deepEqual(kubeletReads({ major: 1, minor }), ['v1beta1']);
    for (const minor of [37, 38, 39]) assert.deepEqual(kubeletReads({ major: 1, minor }), ['v1', 'v1beta1']);
    assert.deepEqual(kubeletReads({ major: 1, minor: 40 }), ['v1']);
    assert.deepEqual(kubeletReads({ major: 2, minor: 0 }), []);
  });

  test('a Node is kept bounded: its name, its pool, a version only when it parses', () => {
    assert.deepEqual(node('a', 'v1.34.4', 'legacy'), {
      name: 'a',
      pool: 'legacy',
      version: 'v1.34.4',
      parsed: { major: 1, minor: 34 },
    });
    assert.deepEqual(node('b', 'garbage'), {
      name: 'b',
      pool: undefined,
      version: undefined,
      parsed: undefined,
    });
    const huge = nodeViewOf({
      metadata: { name: 'c', labels: { other: 'x'.repeat(1000), [NODE_POOL_LABEL]: 'p' } },
      status: { nodeInfo: { kubeletVersion: `v1.34.4${'x'.repeat(100_000)}` } },
    });
    assert.deepEqual(huge.metadata?.labels, { [NODE_POOL_LABEL]: 'p' });
    assert.equal((huge.status?.nodeInfo?.kubeletVersion as string).length, 65);
    assert.deepEqual(
      nodeKubeletOf(huge),
      { name: 'c', pool: 'p', version: undefined, parsed: undefined },
      'too long: not understood',
    );
  });
});

describe('node pools too old for the version served', () => {
  const fleet: NodeKubelet[] = [
    node('l-1', 'v1.34.4', 'legacy'),
    node('l-2', 'v1.34.5-gke.1', 'legacy'),
    node('l-3', 'v1.34.4', 'legacy'),
    node('n-1', 'v1.37.2', 'current'),
    node('lonely', 'v1.35.1'),
    node('odd', 'not-a-version', 'odd'),
  ];

  test('served v1 only: the pools of 1.34 and 1.35 kubelets, by pool, or by node without one', () => {
    assert.deepEqual(oldKubeletPools(['v1'], fleet), [
      { pool: 'node lonely', versions: ['v1.35.1'], nodes: 1 },
      { pool: 'pool legacy', versions: ['v1.34.4', 'v1.34.5-gke.1'], nodes: 3 },
    ]);
    assert.equal(unreadableNodes(fleet), 1, 'a version not understood is not held against the mount');
    assert.equal(
      describeOldKubelets(oldKubeletPools(['v1'], fleet), ['certificates.k8s.io/v1']),
      'kubelets that cannot read the ClusterTrustBundle API served (certificates.k8s.io/v1): node lonely (v1.35.1, 1 node), pool legacy (v1.34.4, v1.34.5-gke.1, 3 nodes)',
    );
  });

  test('v1beta1 served (beside v1, or alone on 1.34–1.36): every node reads it', () => {
    assert.deepEqual(oldKubeletPools(['v1', 'v1beta1'], fleet), []);
    assert.deepEqual(oldKubeletPools(['v1beta1'], fleet), []);
    assert.equal(describeOldKubelets([], ['certificates.k8s.io/v1']), undefined);
  });

  test('the line is bounded however many pools, versions and long names', () => {
    const many = Array.from({ length: 500 }, (_, i) =>
      node(`n${i}`, `v1.34.${i % 7}`, `${'p'.repeat(60)}-${String(i).padStart(3, '0')}`),
    );
    const line = describeOldKubelets(oldKubeletPools(['v1'], many), ['certificates.k8s.io/v1']) ?? '';
    assert.ok(line.length <= MAX_LINE_CHARS, String(line.length));
    assert.match(line, / and 490 more$/);
    const long = [
      node('x'.repeat(253), 'v1.34.1'),
      node('y'.repeat(253), 'v1.34.2'),
      node('z'.repeat(253), 'v1.34.3'),
      node('w'.repeat(253), 'v1.34.4'),
    ];
    assert.ok(
      (describeOldKubelets(oldKubeletPools(['v1'], long), ['certificates.k8s.io/v1']) ?? '').length <=
        MAX_LINE_CHARS,
    );
  });
});

describe('the mount decision with the kubelets weighed in', () => {
  const probe: TrustBundleCapability = { api: 'certificates.k8s.io/v1', projection: 'kept' };
  const old = [node('l-1', 'v1.34.4', 'legacy')];
  const current = [node('n-1', 'v1.37.2', 'current')];

  test('a 1.37 runtime serving only v1 with a 1.34 node: no mount, a warning that names the pool', () => {
    const found = withKubelets(probe, old);
    assert.match(found.kubelets ?? '', /pool legacy \(v1\.34\.4, 1 node\)/);
    const d = trustBundleMount(found);
    assert.ok(!d.mount);
    assert.equal(d.reason, 'kubelet_too_old');
    assert.match(
      d.warning,
      /^rt-bootstrapper: trust bundle not mounted: kubelets that cannot read .*certificates\.k8s\.io\/v1.*pool legacy/,
    );
    assert.ok(d.warning.length <= 256);
  });

  test('every node at 1.37, v1beta1 served beside v1, or a 1.34–1.36 runtime: the mount', () => {
    assert.equal(trustBundleMount(withKubelets(probe, current)).mount, true);
    assert.equal(
      trustBundleMount(withKubelets({ ...probe, servedVersions: ['v1', 'v1beta1'] }, old)).mount,
      true,
    );
    assert.equal(
      trustBundleMount(withKubelets({ ...probe, api: 'certificates.k8s.io/v1beta1' }, old)).mount,
      true,
    );
    assert.deepEqual(withKubelets(probe, []), probe);
  });

  test('no API served or not known: the nodes add nothing; a dropped projection is said first', () => {
    assert.deepEqual(withKubelets({ api: 'none', projection: 'kept' }, old), {
      api: 'none',
      projection: 'kept',
    });
    assert.deepEqual(withKubelets({ api: 'unknown', projection: 'unknown' }, old), {
      api: 'unknown',
      projection: 'unknown',
    });
    const both = withKubelets({ ...probe, projection: 'dropped' }, old);
    const d = trustBundleMount(both);
    assert.ok(!d.mount);
    assert.equal(d.reason, 'projection_dropped');
  });

  test('a long list of pools still makes a warning kubectl shows whole', () => {
    const many = Array.from({ length: 20 }, (_, i) =>
      node(`n${i}`, 'v1.34.4', `pool-${'q'.repeat(50)}-${i}`),
    );
    const d = trustBundleMount(withKubelets(probe, many));
    assert.ok(!d.mount);
    assert.equal(d.warning.length, 256);
    assert.ok(d.warning.endsWith('…'));
  });
});

describe('the kubelet finding reported and on the RuntimeBootstrapper', () => {
  const finding: TrustBundleCapability = {
    api: 'certificates.k8s.io/v1',
    projection: 'kept',
    kubelets:
      'kubelets that cannot read the ClusterTrustBundle API served (certificates.k8s.io/v1): pool legacy (v1.34.4, 1 node)',
  };

  test('the status ConfigMap carries it, and the KCP reads it back bounded', () => {
    const data = reportData({ trustBundle: finding });
    assert.equal(data.trustBundleKubelets, finding.kubelets);
    assert.deepEqual(readReport({ data }).trustBundle, { ...finding, detail: undefined });
    const forged = readReport({ data: { ...data, trustBundleKubelets: 'x'.repeat(100_000) } });
    assert.equal(forged.trustBundle?.kubelets?.length, 2_000);
    assert.equal(
      readReport({ data: reportData({ trustBundle: { ...finding, kubelets: undefined } }) }).trustBundle
        ?.kubelets,
      undefined,
    );
  });

  test('condition TrustBundleProjection False KubeletTooOld names the pools, and the policy mounts nothing', () => {
    const s = new StatusBuilder(
      { metadata: { name: 'rt', namespace: 'kcp-system', generation: 1 }, spec: { runtimeID: 'rt' } },
      new Date(),
    );
    recordProjection(s, finding);
    const c = s.get('TrustBundleProjection');
    assert.ok(c);
    assert.equal(c.status, 'False');
    assert.equal(c.reason, 'KubeletTooOld');
    assert.match(c.message, /pool legacy \(v1\.34\.4, 1 node\)/);
    assert.equal(mountsTrustBundle(s.build().conditions), false);
    recordProjection(s, { ...finding, kubelets: undefined });
    assert.equal(s.get('TrustBundleProjection')?.reason, 'Kept');
    assert.equal(mountsTrustBundle(s.build().conditions), true);
    // What the webhook cannot do at all is said first.
    recordProjection(s, { ...finding, projection: 'dropped' });
    assert.equal(s.get('TrustBundleProjection')?.reason, 'Dropped');
  });
});
