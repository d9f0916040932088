import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FEATURE_ADD_CLUSTER_TRUST_BUNDLE, FEATURE_ALL } from '../../../src/api/webhook-features.js';
import { CTB_HASH_ANNOTATION, CTB_MOUNTED_LABEL, trustBundleHash } from '../../../src/api/trust-stamp.js';
import {
  clusterTrustBundleMount,
  clusterTrustBundleVolume,
} from '../../../src/mutation/add-cluster-trust-bundle.js';
import { mutatePod } from '../../../src/mutation/pipeline.js';
import type { Pod } from '../../../src/mutation/pod.js';
import { stampTrustBundle } from '../../../src/mutation/stamp-trust-bundle.js';
import { applyOps, deepFreeze, edit, makeConfig, seedTrustBundle } from './support.js';

const HASH = trustBundleHash('-----BEGIN CERTIFICATE-----\nA\n-----END CERTIFICATE-----\n');
const OTHER = trustBundleHash('other');
const mounted = (annotations?: Record<string, string>): Pod => ({
  metadata: { name: 'p', ...(annotations ? { annotations } : {}) },
  spec: {
    containers: [{ name: 'a', volumeMounts: [clusterTrustBundleMount(seedTrustBundle)] }],
    volumes: [clusterTrustBundleVolume(seedTrustBundle)],
  },
});

describe('the trust-bundle stamp', () => {
  test('a mounted Pod gets the label and the hash', () => {
    const { pod, result } = edit(mounted(), (b) => stampTrustBundle(b, seedTrustBundle, HASH));
    assert.equal(result.changed, true);
    assert.equal(pod.metadata?.labels?.[CTB_MOUNTED_LABEL], 'true');
    assert.equal(pod.metadata.annotations?.[CTB_HASH_ANNOTATION], HASH);
  });

  test('an up-to-date stamp changes nothing; an old one is replaced', () => {
    const stamped = edit(mounted(), (b) => stampTrustBundle(b, seedTrustBundle, HASH)).pod;
    assert.equal(edit(stamped, (b) => stampTrustBundle(b, seedTrustBundle, HASH)).result.changed, false);
    const renewed = edit(stamped, (b) => stampTrustBundle(b, seedTrustBundle, OTHER));
    assert.equal(renewed.pod.metadata?.annotations?.[CTB_HASH_ANNOTATION], OTHER);
    assert.deepEqual(
      renewed.patch.map((o) => o.op),
      ['replace'],
    );
  });

  test('no hash known: label only, and a stamp brought from the Pod template is removed', () => {
    const fresh = edit(mounted(), (b) => stampTrustBundle(b, seedTrustBundle, undefined));
    assert.equal(fresh.pod.metadata?.labels?.[CTB_MOUNTED_LABEL], 'true');
    assert.equal(fresh.pod.metadata.annotations, undefined);
    const inherited = edit(mounted({ [CTB_HASH_ANNOTATION]: OTHER, keep: 'x' }), (b) =>
      stampTrustBundle(b, seedTrustBundle, undefined),
    );
    assert.deepEqual(inherited.pod.metadata?.annotations, { keep: 'x' });
  });

  test('a Pod without our mount is never stamped', () => {
    const noVolume: Pod = { metadata: { name: 'p' }, spec: { containers: [{ name: 'a' }] } };
    const volumeUnused: Pod = {
      metadata: { name: 'p' },
      spec: { containers: [{ name: 'a' }], volumes: [clusterTrustBundleVolume(seedTrustBundle)] },
    };
    const otherBundle: Pod = {
      metadata: { name: 'p' },
      spec: {
        containers: [{ name: 'a', volumeMounts: [clusterTrustBundleMount(seedTrustBundle)] }],
        volumes: [clusterTrustBundleVolume({ ...seedTrustBundle, name: 'someone-elses' })],
      },
    };
    for (const pod of [noVolume, volumeUnused, otherBundle])
      assert.equal(edit(pod, (b) => stampTrustBundle(b, seedTrustBundle, HASH)).result.changed, false);
  });

  test('our volume, our bundle and our mount count among others, and the stamp never warns', () => {
    const pod: Pod = {
      metadata: { name: 'p' },
      spec: {
        containers: [
          {
            name: 'a',
            volumeMounts: [{ name: 'data', mountPath: '/data' }, clusterTrustBundleMount(seedTrustBundle)],
          },
        ],
        volumes: [
          { name: 'data', emptyDir: {} },
          {
            name: seedTrustBundle.volumeName,
            projected: {
              sources: [
                { configMap: { name: 'extra-ca' } },
                { clusterTrustBundle: { name: seedTrustBundle.name, path: 'ca.pem' } },
              ],
            },
          },
        ],
      },
    };
    const { pod: out, result } = edit(pod, (b) => stampTrustBundle(b, seedTrustBundle, HASH));
    assert.deepEqual(result, { changed: true, warnings: [] });
    assert.deepEqual(out.metadata?.labels, { [CTB_MOUNTED_LABEL]: 'true' });
    assert.deepEqual(out.metadata.annotations, { [CTB_HASH_ANNOTATION]: HASH });
  });

  test('our bundle under another volume name, or our volume mounted by no container, is no mount of ours', () => {
    const elsewhere: Pod = {
      metadata: { name: 'p' },
      spec: {
        containers: [{ name: 'a', volumeMounts: [clusterTrustBundleMount(seedTrustBundle)] }],
        volumes: [
          clusterTrustBundleVolume({ ...seedTrustBundle, name: 'someone-elses' }),
          clusterTrustBundleVolume({ ...seedTrustBundle, volumeName: 'elsewhere' }),
        ],
      },
    };
    const otherMounts: Pod = {
      metadata: { name: 'p' },
      spec: {
        containers: [{ name: 'a', volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
        volumes: [{ name: 'data', emptyDir: {} }, clusterTrustBundleVolume(seedTrustBundle)],
      },
    };
    const noSpec: Pod = { metadata: { name: 'p' } };
    for (const pod of [elsewhere, otherMounts, noSpec])
      assert.deepEqual(edit(pod, (b) => stampTrustBundle(b, seedTrustBundle, HASH)).result, {
        changed: false,
        warnings: [],
      });
  });

  test('through the pipeline: mounted and stamped at creation; opted out of the mount, no stamp', () => {
    const config = makeConfig({
      availableFeatures: [FEATURE_ALL],
      namespaceFeatures: { team: [FEATURE_ALL] },
    });
    const pod: Pod = deepFreeze({
      metadata: { name: 'p' },
      spec: { containers: [{ name: 'a', image: 'x' }] },
    });
    const input = {
      pod,
      operation: 'CREATE' as const,
      namespace: { name: 'team' },
      config,
      pullSecretAvailable: true,
    };
    const result = mutatePod({ ...input, trustBundleHash: HASH });
    assert.deepEqual(applyOps(pod, result.patch), result.pod);
    assert.equal(result.pod.metadata?.annotations?.[CTB_HASH_ANNOTATION], HASH);
    assert.equal(result.pod.metadata.labels?.[CTB_MOUNTED_LABEL], 'true');
    assert.equal(result.applied.filter((f) => f === FEATURE_ADD_CLUSTER_TRUST_BUNDLE).length, 1);
    assert.deepEqual(mutatePod({ ...input, pod: result.pod, trustBundleHash: HASH }).patch, [], 'stable');

    const optedOut = deepFreeze({
      ...pod,
      metadata: { name: 'p', annotations: { [FEATURE_ADD_CLUSTER_TRUST_BUNDLE]: 'false' } },
    });
    const out = mutatePod({ ...input, pod: optedOut, trustBundleHash: HASH });
    assert.equal(out.pod.metadata?.annotations?.[CTB_HASH_ANNOTATION], undefined);
    assert.equal(out.pod.metadata?.labels?.[CTB_MOUNTED_LABEL], undefined);
    assert.equal(out.pod.spec?.volumes, undefined);
  });

  test('an UPDATE never stamps (only images may change then)', () => {
    const config = makeConfig({ namespaceFeatures: { team: [FEATURE_ALL] } });
    const pod = deepFreeze(mounted());
    const result = mutatePod({
      pod,
      oldPod: pod,
      operation: 'UPDATE',
      namespace: { name: 'team' },
      config,
      pullSecretAvailable: true,
      trustBundleHash: HASH,
    });
    assert.deepEqual(result.patch, []);
  });
});
