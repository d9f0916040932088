import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { driftEventFor, type DriftRequest } from '../../../src/drift/drift-detection.js';

type Kind = DriftRequest['kind'];
const SECRET: Kind = { group: '', version: 'v1', kind: 'Secret' };
const CONFIG_MAP: Kind = { group: '', version: 'v1', kind: 'ConfigMap' };
const CTB: Kind = { group: 'certificates.k8s.io', version: 'v1beta1', kind: 'ClusterTrustBundle' };

const meta = (name: string, namespace?: string, extra: Record<string, unknown> = {}) => ({
  name,
  ...(namespace === undefined ? {} : { namespace }),
  resourceVersion: '1',
  ...extra,
});

const secret = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: meta('registry-credentials', 'kyma-system'),
  type: 'kubernetes.io/dockerconfigjson',
  data: { '.dockerconfigjson': 'e30=' },
};
const configMap = {
  apiVersion: 'v1',
  kind: 'ConfigMap',
  metadata: meta('rt-bootstrapper-config', 'kyma-system'),
  data: { 'rt-bootstrapper-config.json': '{}' },
  binaryData: { blob: 'AAE=' },
};
const ctb = {
  apiVersion: 'certificates.k8s.io/v1beta1',
  kind: 'ClusterTrustBundle',
  metadata: meta('rt-bootstrapper-k3d.test:ctb:1'),
  spec: { signerName: 'rt-bootstrapper-k3d.test/ctb', trustBundle: '-----BEGIN CERTIFICATE-----…' },
};

type Obj = Record<string, unknown>;
const update = (kind: Kind, oldObject: Obj, object: Obj): DriftRequest => {
  const m = oldObject.metadata as { name: string; namespace?: string };
  return { operation: 'UPDATE', kind, name: m.name, namespace: m.namespace, oldObject, object };
};
const withMeta = (o: Obj, extra: Obj): Obj => ({ ...o, metadata: { ...(o.metadata as Obj), ...extra } });

// Metadata-only changes: none of them is drift for any kind.
const metadataChanges: Obj[] = [
  { labels: { 'app.kubernetes.io/managed-by': 'someone-else' } },
  { annotations: { 'kubectl.kubernetes.io/last-applied-configuration': '{}' } },
  { managedFields: [{ manager: 'kubectl', operation: 'Update' }] },
  { resourceVersion: '2', generation: 3 },
];

describe('driftEventFor', () => {
  const cases: { kind: Kind; object: Obj; contentChanges: [string, Obj][]; ns: string }[] = [
    {
      kind: SECRET,
      object: secret,
      ns: 'kyma-system',
      contentChanges: [
        ['a data value', { ...secret, data: { '.dockerconfigjson': 'eyJ9' } }],
        ['a data key added', { ...secret, data: { ...secret.data, extra: 'eA==' } }],
        ['data removed', { ...secret, data: undefined }],
        ['the type', { ...secret, type: 'Opaque' }],
        ['stringData', { ...secret, stringData: { token: 'x' } }],
      ],
    },
    {
      kind: CONFIG_MAP,
      object: configMap,
      ns: 'kyma-system',
      contentChanges: [
        ['a data value', { ...configMap, data: { 'rt-bootstrapper-config.json': '{"overrides":{}}' } }],
        ['binaryData', { ...configMap, binaryData: { blob: 'AAI=' } }],
        ['binaryData removed', { ...configMap, binaryData: undefined }],
      ],
    },
    {
      kind: CTB,
      object: ctb,
      ns: '',
      contentChanges: [
        ['the trust bundle', { ...ctb, spec: { ...ctb.spec, trustBundle: 'other' } }],
        ['the signer name', { ...ctb, spec: { ...ctb.spec, signerName: 'x/y' } }],
      ],
    },
  ];

  for (const c of cases) {
    const name = (c.object.metadata as { name: string }).name;
    const expected = {
      watched: { Namespace: c.ns, Name: name },
      watchedGvk: { group: c.kind.group, version: c.kind.version, kind: c.kind.kind },
    };

    test(`${c.kind.kind}: DELETE is drift`, () => {
      const req: DriftRequest = {
        operation: 'DELETE',
        kind: c.kind,
        name,
        namespace: c.ns === '' ? undefined : c.ns,
        object: null,
        oldObject: c.object,
      };
      assert.deepEqual(driftEventFor(req), expected);
      // The name and namespace also come from the old object when the request omits them.
      assert.deepEqual(driftEventFor({ operation: 'DELETE', kind: c.kind, oldObject: c.object }), expected);
    });

    for (const [what, changed] of c.contentChanges) {
      test(`${c.kind.kind}: an UPDATE of ${what} is drift`, () => {
        assert.deepEqual(driftEventFor(update(c.kind, c.object, changed)), expected);
        assert.deepEqual(driftEventFor(update(c.kind, changed, c.object)), expected, 'and back');
      });
    }

    test(`${c.kind.kind}: metadata-only UPDATEs are not drift`, () => {
      for (const extra of metadataChanges) {
        assert.equal(driftEventFor(update(c.kind, c.object, withMeta(c.object, extra))), undefined);
      }
      assert.equal(driftEventFor(update(c.kind, c.object, structuredClone(c.object))), undefined);
    });

    test(`${c.kind.kind}: CREATE and CONNECT are not drift`, () => {
      for (const operation of ['CREATE', 'CONNECT'] as const) {
        assert.equal(driftEventFor({ operation, kind: c.kind, name, object: c.object }), undefined);
      }
    });
  }

  test('content compares by value: key order, and empty versus absent maps, do not matter', () => {
    const reordered = { ...secret, data: { b: 'Yg==', a: 'YQ==' } };
    const ordered = { ...secret, data: { a: 'YQ==', b: 'Yg==' } };
    assert.equal(driftEventFor(update(SECRET, ordered, reordered)), undefined);
    const noBinary = { ...configMap, binaryData: undefined };
    assert.equal(driftEventFor(update(CONFIG_MAP, noBinary, { ...configMap, binaryData: {} })), undefined);
    assert.equal(driftEventFor(update(CONFIG_MAP, noBinary, { ...configMap, binaryData: null })), undefined);
  });

  test('an UPDATE without the old object is treated as drift', () => {
    const req: DriftRequest = {
      operation: 'UPDATE',
      kind: SECRET,
      name: 'registry-credentials',
      object: secret,
    };
    assert.equal(driftEventFor(req)?.watched.Name, 'registry-credentials');
  });

  test('other kinds are never drift, whatever the operation', () => {
    const others: Kind[] = [
      { group: '', version: 'v1', kind: 'Pod' },
      { group: 'apps', version: 'v1', kind: 'Deployment' },
      { group: 'example.com', version: 'v1', kind: 'Secret' },
      { group: 'certificates.k8s.io', version: 'v1', kind: 'CertificateSigningRequest' },
    ];
    for (const kind of others) {
      for (const operation of ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'] as const) {
        assert.equal(
          driftEventFor({ operation, kind, name: 'x', namespace: 'y', oldObject: secret, object: null }),
          undefined,
        );
      }
    }
  });

  test('a DELETE without any name yields no event', () => {
    assert.equal(
      driftEventFor({ operation: 'DELETE', kind: SECRET, object: null, oldObject: null }),
      undefined,
    );
  });

  test('property: random metadata never drifts, any change of data does', () => {
    const strMap = fc.dictionary(fc.string({ maxLength: 8 }), fc.string({ maxLength: 12 }), { maxKeys: 4 });
    fc.assert(
      fc.property(strMap, strMap, strMap, (data, labels, annotations) => {
        const before = { ...secret, data };
        const after = withMeta(before, { labels, annotations, resourceVersion: '99' });
        assert.equal(driftEventFor(update(SECRET, before, after)), undefined);
        const changed = { ...after, data: { ...data, '\u0000new': 'x' } };
        assert.notEqual(driftEventFor(update(SECRET, before, changed)), undefined);
      }),
    );
  });
});

test('a write under our field manager is drift like any other: anyone can name a field manager', () => {
  const base = {
    operation: 'UPDATE' as const,
    kind: { group: '', version: 'v1', kind: 'Secret' },
    namespace: 'kyma-system',
    name: 'registry-credentials',
    oldObject: { data: { a: 'MQ==' } },
    object: { data: { a: 'Mg==' } },
  };
  // The registration's matchConditions skip the KCP's and the webhook's own writes by the user
  // the API server authenticated; what reaches the webhook is someone else's.
  assert.ok(driftEventFor({ ...base, options: { kind: 'UpdateOptions', fieldManager: 'rt-bootstrapper' } }));
  assert.ok(driftEventFor({ ...base, options: { kind: 'UpdateOptions', fieldManager: 'kubectl-edit' } }));
  assert.ok(driftEventFor(base));
});
