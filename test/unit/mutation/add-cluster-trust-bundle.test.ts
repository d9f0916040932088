import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  addClusterTrustBundle,
  clusterTrustBundleMount,
  clusterTrustBundleVolume,
} from '../../../src/mutation/add-cluster-trust-bundle.js';
import type { Pod, Volume, VolumeMount } from '../../../src/mutation/pod.js';
import { edit, seedTrustBundle } from './support.js';

const ours: Volume = {
  name: 'rt-bootstrapper-certs',
  projected: {
    defaultMode: 420,
    sources: [
      { clusterTrustBundle: { name: 'rt-bootstrapper-k3d.test:ctb:1', path: 'kube-apiserver-serving.pem' } },
    ],
  },
};
const mount: VolumeMount = { mountPath: '/etc/ssl/certs', name: 'rt-bootstrapper-certs', readOnly: true };
const data: Volume = { name: 'data', emptyDir: {} };
const dataMount: VolumeMount = { mountPath: '/data', name: 'data' };

interface Case {
  readonly name: string;
  readonly pod: Pod;
  readonly volumes: readonly Volume[] | undefined;
  readonly containerMounts: readonly (readonly VolumeMount[] | undefined)[];
  readonly initMounts?: readonly (readonly VolumeMount[] | undefined)[];
  readonly warnings?: readonly RegExp[];
}

const cases: readonly Case[] = [
  {
    name: 'fresh Pod: volume and mount added',
    pod: { spec: { containers: [{ name: 'a' }] } },
    volumes: [ours],
    containerMounts: [[mount]],
  },
  {
    name: 'every container and init container, others kept',
    pod: {
      spec: {
        containers: [{ name: 'a', volumeMounts: [dataMount] }, { name: 'b' }],
        initContainers: [{ name: 'i' }],
        volumes: [data],
      },
    },
    volumes: [data, ours],
    containerMounts: [[dataMount, mount], [mount]],
    initMounts: [[mount]],
  },
  {
    name: 'our volume already there: not added twice, missing mounts added',
    pod: { spec: { containers: [{ name: 'a', volumeMounts: [mount] }, { name: 'b' }], volumes: [ours] } },
    volumes: [ours],
    containerMounts: [[mount], [mount]],
  },
  {
    name: 'fully mutated already: unchanged',
    pod: { spec: { containers: [{ name: 'a', volumeMounts: [mount] }], volumes: [data, ours] } },
    volumes: [data, ours],
    containerMounts: [[mount]],
  },
  {
    name: 'a foreign volume with our name: nothing added, no mounts',
    pod: {
      spec: { containers: [{ name: 'a' }], volumes: [{ name: 'rt-bootstrapper-certs', emptyDir: {} }] },
    },
    volumes: [{ name: 'rt-bootstrapper-certs', emptyDir: {} }],
    containerMounts: [undefined],
    warnings: [/volume "rt-bootstrapper-certs" exists and is not the trust-bundle volume/],
  },
  {
    name: 'a stale copy of our volume (other bundle) counts as foreign',
    pod: {
      spec: {
        containers: [{ name: 'a' }],
        volumes: [
          {
            ...ours,
            projected: {
              defaultMode: 420,
              sources: [{ clusterTrustBundle: { name: 'old', path: 'x.pem' } }],
            },
          },
        ],
      },
    },
    volumes: [
      {
        ...ours,
        projected: { defaultMode: 420, sources: [{ clusterTrustBundle: { name: 'old', path: 'x.pem' } }] },
      },
    ],
    containerMounts: [undefined],
    warnings: [/not the trust-bundle volume/],
  },
  {
    name: 'a container with something else at the path is skipped, the others mounted',
    pod: {
      spec: {
        containers: [
          { name: 'a', volumeMounts: [{ mountPath: '/etc/ssl/certs', name: 'data' }] },
          { name: 'b' },
        ],
        volumes: [data],
      },
    },
    volumes: [data, ours],
    containerMounts: [[{ mountPath: '/etc/ssl/certs', name: 'data' }], [mount]],
    warnings: [
      /^containers\[0\] "a" already mounts "data" at \/etc\/ssl\/certs; trust bundle not mounted there$/,
    ],
  },
  {
    name: 'the same path written differently is the same path',
    pod: {
      spec: { containers: [{ name: 'a', volumeMounts: [{ mountPath: '/etc/ssl//certs/', name: 'data' }] }] },
    },
    volumes: undefined,
    containerMounts: [[{ mountPath: '/etc/ssl//certs/', name: 'data' }]],
    warnings: [/already mounts "data"/],
  },
  {
    name: 'our volume already mounted at the path (any flags): left as it is',
    pod: {
      spec: {
        containers: [
          { name: 'a', volumeMounts: [{ mountPath: '/etc/ssl/certs/', name: 'rt-bootstrapper-certs' }] },
        ],
        volumes: [ours],
      },
    },
    volumes: [ours],
    containerMounts: [[{ mountPath: '/etc/ssl/certs/', name: 'rt-bootstrapper-certs' }]],
  },
  {
    name: 'mounts at parent or child paths do not conflict',
    pod: {
      spec: {
        containers: [
          {
            name: 'a',
            volumeMounts: [
              { mountPath: '/etc/ssl', name: 'p' },
              { mountPath: '/etc/ssl/certs/x.pem', name: 'c', subPath: 'x.pem' },
            ],
          },
        ],
      },
    },
    volumes: [ours],
    containerMounts: [
      [
        { mountPath: '/etc/ssl', name: 'p' },
        { mountPath: '/etc/ssl/certs/x.pem', name: 'c', subPath: 'x.pem' },
        mount,
      ],
    ],
  },
  {
    name: 'every container conflicts: no unused volume is added',
    pod: {
      spec: { containers: [{ name: 'a', volumeMounts: [{ mountPath: '/etc/ssl/certs', name: 'data' }] }] },
    },
    volumes: undefined,
    containerMounts: [[{ mountPath: '/etc/ssl/certs', name: 'data' }]],
    warnings: [/already mounts/],
  },
  {
    name: 'no containers: nothing to do',
    pod: { spec: { containers: [] } },
    volumes: undefined,
    containerMounts: [],
  },
];

describe('addClusterTrustBundle', () => {
  for (const c of cases) {
    test(c.name, () => {
      const { result, pod, patch } = edit(c.pod, (b) => addClusterTrustBundle(b, seedTrustBundle));
      assert.deepEqual(pod.spec?.volumes, c.volumes);
      assert.deepEqual(
        pod.spec?.containers.map((x) => x.volumeMounts),
        c.containerMounts,
      );
      if (c.initMounts !== undefined) {
        assert.deepEqual(
          pod.spec.initContainers?.map((x) => x.volumeMounts),
          c.initMounts,
        );
      }
      assert.equal(result.changed, patch.length > 0);
      assert.equal(result.warnings.length, c.warnings?.length ?? 0, result.warnings.join('\n'));
      c.warnings?.forEach((w, i) => {
        assert.match(result.warnings[i] ?? '', w);
      });
    });
  }

  test('ephemeral containers are not mounted', () => {
    const { pod } = edit(
      { spec: { containers: [{ name: 'a' }], ephemeralContainers: [{ name: 'e' }] } },
      (b) => addClusterTrustBundle(b, seedTrustBundle),
    );
    assert.equal(pod.spec?.ephemeralContainers?.[0]?.volumeMounts, undefined);
  });

  test('custom volume name and mount path', () => {
    const config = { ...seedTrustBundle, volumeName: 'ca', volumeMountPath: '/opt/ca' };
    const { pod, patch } = edit({ spec: { containers: [{ name: 'a' }] } }, (b) =>
      addClusterTrustBundle(b, config),
    );
    assert.deepEqual(pod.spec?.volumes, [clusterTrustBundleVolume(config)]);
    assert.deepEqual(pod.spec.containers[0]!.volumeMounts, [
      { mountPath: '/opt/ca', name: 'ca', readOnly: true },
    ]);
    assert.deepEqual(clusterTrustBundleMount(config), { mountPath: '/opt/ca', name: 'ca', readOnly: true });
    assert.deepEqual(
      patch.map((op) => `${op.op} ${op.path}`),
      ['add /spec/volumes', 'add /spec/containers/0/volumeMounts'],
    );
  });

  test('the volume is exactly the seed’s', () => {
    assert.deepEqual(clusterTrustBundleVolume(seedTrustBundle), ours);
  });
});
