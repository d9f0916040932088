import type { V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { ORIGINAL_IMAGES_ANNOTATION, REVISION_LABEL } from '../../../../src/api/workload-health.js';
import {
  followedPodOf,
  observationOf,
  secretPresenceOf,
  StringPool,
} from '../../../../src/runtime-agent/workload-health/followed-pod.js';

const settings = { pullSecretName: 'registry-credentials' };
const mirror = (image: string): string | undefined =>
  image.startsWith('docker.io/') ? `mirror.example.com/${image.slice('docker.io/'.length)}` : undefined;
const RULES = (): typeof mirror => mirror;

function pod(name: string, o: { revision?: string; uid?: string } = {}): V1Pod {
  return {
    metadata: {
      name,
      namespace: 'ns',
      uid: o.uid ?? `uid-${name}`,
      resourceVersion: '7',
      creationTimestamp: '2026-11-27T10:00:00Z' as unknown as Date,
      labels: { [REVISION_LABEL]: o.revision ?? 'v1', app: 'x' },
      annotations: { [ORIGINAL_IMAGES_ANNOTATION]: '{"app":"docker.io/app:1"}', big: 'y'.repeat(10_000) },
      managedFields: [{ manager: 'kubelet' }],
    },
    spec: {
      containers: [{ name: 'app', image: 'mirror.example.com/app:1', env: [{ name: 'A', value: 'b' }] }],
      imagePullSecrets: [{ name: 'registry-credentials' }],
    },
    status: {
      containerStatuses: [
        {
          name: 'app',
          image: 'mirror.example.com/app:1',
          imageID: '',
          ready: false,
          restartCount: 0,
          state: { waiting: { reason: 'ErrImagePull', message: 'unauthorized' } },
        },
      ],
    },
  };
}

describe('followed Pods', () => {
  test('only the identity and the facts are kept', () => {
    const f = followedPodOf(pod('a'), settings, new StringPool(), RULES);
    assert.deepEqual(Object.keys(f).sort(), ['createdAt', 'facts', 'metadata']);
    assert.deepEqual(f.metadata, { name: 'a', namespace: 'ns', uid: 'uid-a', resourceVersion: '7' });
    assert.equal(f.createdAt, '2026-11-27T10:00:00Z');
    assert.equal(f.facts?.revision, 'v1');
    assert.equal(f.facts.failures[0]?.kind, 'image-pull');
    assert.equal(f.facts.pullWaits?.[0]?.kind, 'pull-secret-missing');
    assert.ok(JSON.stringify(f).length < 1_000);
  });

  test('a Date creation time (a client that parsed it) is kept as RFC 3339; none is absent', () => {
    const p = pod('a');
    p.metadata!.creationTimestamp = new Date('2026-11-27T10:00:00Z');
    assert.equal(followedPodOf(p, settings, new StringPool(), RULES).createdAt, '2026-11-27T10:00:00.000Z');
    delete p.metadata!.creationTimestamp;
    assert.equal(followedPodOf(p, settings, new StringPool(), RULES).createdAt, undefined);
  });

  test('a Pod without our revision has no facts and is no observation', () => {
    const p = pod('a');
    p.metadata!.labels = {};
    const f = followedPodOf(p, settings, new StringPool(), RULES);
    assert.equal(f.facts, undefined);
    assert.equal(observationOf(f, true), undefined);
    assert.equal(
      observationOf({ ...followedPodOf(pod('b'), settings, new StringPool(), RULES), metadata: {} }, true),
      undefined,
    );
    assert.deepEqual(followedPodOf({}, settings, new StringPool(), RULES), {
      metadata: { name: undefined, namespace: undefined, uid: undefined, resourceVersion: undefined },
      createdAt: undefined,
      facts: undefined,
    });
  });

  test('the observation depends on whether our Secret exists', () => {
    const f = followedPodOf(pod('a'), settings, new StringPool(), RULES);
    const present = observationOf(f, true);
    assert.deepEqual(present, {
      uid: 'uid-a',
      pod: 'ns/a',
      revision: 'v1',
      createdAt: '2026-11-27T10:00:00Z',
      started: false,
      failures: f.facts?.failures,
      ran: [],
    });
    assert.deepEqual(
      observationOf(f, false)?.failures.map((x) => x.kind),
      ['pull-secret-missing'],
    );
  });

  test('namespaces and revisions are shared between Pods, up to the pool bound', () => {
    const pool = new StringPool(1);
    const a = followedPodOf(JSON.parse(JSON.stringify(pod('a'))) as V1Pod, settings, pool, RULES);
    const b = followedPodOf(JSON.parse(JSON.stringify(pod('b'))) as V1Pod, settings, pool, RULES);
    assert.equal(a.metadata?.namespace, b.metadata?.namespace);
    assert.equal(pool.intern(undefined), undefined);
    assert.equal(pool.intern('other'), 'other', 'past the bound: returned, not kept');
  });

  test('a Secret is kept without its data', () => {
    const s = secretPresenceOf({
      metadata: { name: 'registry-credentials', namespace: 'ns', resourceVersion: '1' },
      data: { '.dockerconfigjson': 'c2VjcmV0' },
    } as Parameters<typeof secretPresenceOf>[0]);
    assert.deepEqual(s, {
      metadata: { name: 'registry-credentials', namespace: 'ns', resourceVersion: '1' },
    });
    assert.deepEqual(secretPresenceOf({}), {
      metadata: { name: undefined, namespace: undefined, resourceVersion: undefined },
    });
  });
});
