// addClusterTrustBundle at the edges: volumes that are almost ours, malformed mounts, path
// spellings, and the container lists it is told to visit.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  addClusterTrustBundle,
  clusterTrustBundleMount,
  clusterTrustBundleVolume,
} from '../../../src/mutation/add-cluster-trust-bundle.js';
import type { Pod, Volume, VolumeMount } from '../../../src/mutation/pod.js';
import { edit, seedTrustBundle } from './support.js';

const ours = clusterTrustBundleVolume(seedTrustBundle);
const mount = clusterTrustBundleMount(seedTrustBundle);
const NAME = seedTrustBundle.volumeName;
const FOREIGN =
  /^volume "rt-bootstrapper-certs" exists and is not the trust-bundle volume; trust bundle not mounted$/;

function withVolume(volume: Volume): Pod {
  return { spec: { containers: [{ name: 'a' }], volumes: [volume] } };
}

describe('addClusterTrustBundle: a volume of our name must be exactly ours', () => {
  // JSON from the API server may hold what the Volume type does not allow, such as null.
  const almost: readonly [string, Volume][] = [
    ['only the name', { name: NAME }],
    ['no sources', { name: NAME, projected: { defaultMode: 420, sources: [] } }],
    [
      'a second source',
      {
        name: NAME,
        projected: {
          ...ours.projected,
          sources: [...(ours.projected?.sources ?? []), { configMap: { name: 'x' } }],
        },
      },
    ],
    ['no default mode', { name: NAME, projected: { sources: ours.projected?.sources ?? [] } }],
    ['another default mode', { name: NAME, projected: { ...ours.projected, defaultMode: 256 } }],
    [
      'a default mode as text',
      JSON.parse(JSON.stringify({ ...ours, projected: { ...ours.projected, defaultMode: '420' } })) as Volume,
    ],
    ['an extra source type', { ...ours, emptyDir: {} }],
    ['projected null', JSON.parse(JSON.stringify({ name: NAME, projected: null })) as Volume],
    [
      'sources as an object',
      JSON.parse(
        JSON.stringify({
          name: NAME,
          projected: { defaultMode: 420, sources: { 0: ours.projected?.sources?.[0] } },
        }),
      ) as Volume,
    ],
    [
      'a key besides those of ours',
      {
        name: NAME,
        projected: {
          defaultMode: 420,
          sources: [
            {
              clusterTrustBundle: {
                name: seedTrustBundle.name,
                path: seedTrustBundle.certWritePath,
                signerName: 'example.com/other',
              },
            },
          ],
        },
      },
    ],
    [
      'a default mode as an empty object',
      JSON.parse(JSON.stringify({ ...ours, projected: { ...ours.projected, defaultMode: {} } })) as Volume,
    ],
    [
      'sources as an object with a length',
      JSON.parse(
        JSON.stringify({
          name: NAME,
          projected: { defaultMode: 420, sources: { 0: ours.projected?.sources?.[0], length: 1 } },
        }),
      ) as Volume,
    ],
  ];
  for (const [what, volume] of almost) {
    test(`${what}: not ours, nothing added`, () => {
      const { result, pod, patch } = edit(withVolume(volume), (b) =>
        addClusterTrustBundle(b, seedTrustBundle),
      );
      assert.deepEqual(patch, []);
      assert.equal(result.changed, false);
      assert.deepEqual(pod.spec?.volumes, [volume]);
      assert.equal(result.warnings.length, 1);
      assert.match(result.warnings[0] ?? '', FOREIGN);
    });
  }

  test('a copy of ours, keys in another order, is ours: only the mount is added', () => {
    const copy: Volume = {
      projected: {
        sources: [
          { clusterTrustBundle: { path: seedTrustBundle.certWritePath, name: seedTrustBundle.name } },
        ],
        defaultMode: 420,
      },
      name: NAME,
    };
    const { result, pod } = edit(withVolume(copy), (b) => addClusterTrustBundle(b, seedTrustBundle));
    assert.deepEqual(result, { changed: true, warnings: [] });
    assert.deepEqual(pod.spec?.volumes, [copy]);
    assert.deepEqual(pod.spec.containers[0]?.volumeMounts, [mount]);
  });
});

describe('addClusterTrustBundle: mounts', () => {
  test('a mount without a path (malformed) is no conflict', () => {
    const odd = JSON.parse(JSON.stringify({ name: 'x' })) as VolumeMount;
    const { result, pod } = edit({ spec: { containers: [{ name: 'a', volumeMounts: [odd] }] } }, (b) =>
      addClusterTrustBundle(b, seedTrustBundle),
    );
    assert.deepEqual(result, { changed: true, warnings: [] });
    assert.deepEqual(pod.spec?.containers[0]?.volumeMounts, [odd, mount]);
    assert.deepEqual(pod.spec.volumes, [ours]);
  });

  for (const spelled of ['/etc///ssl/certs', '//etc/ssl/certs', '/etc/ssl/certs/', '/etc/ssl////certs//']) {
    test(`a mount at ${spelled} is at the trust-store path`, () => {
      const { result, pod } = edit(
        { spec: { containers: [{ name: 'a', volumeMounts: [{ mountPath: spelled, name: 'data' }] }] } },
        (b) => addClusterTrustBundle(b, seedTrustBundle),
      );
      assert.equal(result.changed, false);
      assert.equal(pod.spec?.volumes, undefined);
      assert.match(result.warnings[0] ?? '', /already mounts "data" at \/etc\/ssl\/certs;/);
    });
  }

  test('paths that only share a prefix or differ in a character do not conflict', () => {
    for (const other of ['/etc/ssl/cert', '/etc/ssl/certsx', '/etc/sslcerts', 'etc/ssl/certs']) {
      const { result } = edit(
        { spec: { containers: [{ name: 'a', volumeMounts: [{ mountPath: other, name: 'data' }] }] } },
        (b) => addClusterTrustBundle(b, seedTrustBundle),
      );
      assert.deepEqual(result, { changed: true, warnings: [] }, other);
    }
  });

  test('mounted at the root: "/" is "/", and "//" is too', () => {
    const config = { ...seedTrustBundle, volumeMountPath: '/' };
    const conflict = edit(
      { spec: { containers: [{ name: 'a', volumeMounts: [{ mountPath: '//', name: 'data' }] }] } },
      (b) => addClusterTrustBundle(b, config),
    );
    assert.equal(conflict.result.changed, false);
    assert.equal(conflict.result.warnings.length, 1);
    const beside = edit(
      { spec: { containers: [{ name: 'a', volumeMounts: [{ mountPath: '', name: 'data' }] }] } },
      (b) => addClusterTrustBundle(b, config),
    );
    assert.deepEqual(beside.result, { changed: true, warnings: [] }, 'an empty path is not the root');
  });
});

test('a Pod without a spec is left alone', () => {
  const { result, patch } = edit({ metadata: { name: 'p' } }, (b) =>
    addClusterTrustBundle(b, seedTrustBundle),
  );
  assert.deepEqual(result, { changed: false, warnings: [] });
  assert.deepEqual(patch, []);
});

describe('addClusterTrustBundle: the container lists visited', () => {
  const pod: Pod = {
    spec: {
      containers: [{ name: 'a' }],
      initContainers: [{ name: 'i' }],
      ephemeralContainers: [{ name: 'e' }],
    },
  };

  test('only the lists named', () => {
    const { pod: out, patch } = edit(pod, (b) =>
      addClusterTrustBundle(b, seedTrustBundle, {
        containerKinds: ['initContainers', 'ephemeralContainers'],
      }),
    );
    assert.equal(out.spec?.containers[0]?.volumeMounts, undefined);
    assert.deepEqual(out.spec?.initContainers?.[0]?.volumeMounts, [mount]);
    assert.deepEqual(out.spec.ephemeralContainers?.[0]?.volumeMounts, [mount]);
    assert.deepEqual(
      patch.map((o) => o.path),
      ['/spec/volumes', '/spec/initContainers/0/volumeMounts', '/spec/ephemeralContainers/0/volumeMounts'],
    );
  });

  test('no list named: nothing to mount, no volume', () => {
    const { result, patch } = edit(pod, (b) =>
      addClusterTrustBundle(b, seedTrustBundle, { containerKinds: [] }),
    );
    assert.deepEqual(result, { changed: false, warnings: [] });
    assert.deepEqual(patch, []);
  });

  test('the warning names the list and index of the container skipped', () => {
    const { result } = edit(
      {
        spec: {
          containers: [{ name: 'a' }],
          initContainers: [
            { name: 'i' },
            { name: 'j', volumeMounts: [{ mountPath: '/etc/ssl/certs', name: 'd' }] },
          ],
        },
      },
      (b) => addClusterTrustBundle(b, seedTrustBundle),
    );
    assert.deepEqual(result.warnings, [
      'initContainers[1] "j" already mounts "d" at /etc/ssl/certs; trust bundle not mounted there',
    ]);
  });
});
