import type { KubernetesObject } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { planSources } from '../../../../src/controller/direct/runtime-manifests.js';
import {
  isSetObject,
  setObjectKey,
  SetLedger,
  setWrites,
  writtenVersionOf,
} from '../../../../src/controller/direct/set-writes.js';
import { buildSyncSet, type SyncSources } from '../../../../src/controller/direct/sync-set.js';
import { seedConfigText, syncSources } from '../../../support/fixtures.js';

/** The planned objects (namespaces, then the set) of sources changed by `over`. */
function planned(over: Partial<SyncSources> = {}): readonly KubernetesObject[] {
  const r = buildSyncSet(syncSources(over));
  assert.ok(r.ok);
  return planSources(r.set);
}

const kinds = (objects: readonly KubernetesObject[]): string[] => objects.map((o) => o.kind ?? '');

/** A ledger holding what a pass that wrote `objects` of set v-1 to runtime `k` left (`finished`: all of them stored). */
function ledgerAfter(objects: readonly KubernetesObject[], finished = true, k = 'kcp-system/rt'): SetLedger {
  const ledger = new SetLedger();
  for (const o of objects) ledger.wrote(k, o);
  if (finished) ledger.committed(k, 'v-1');
  return ledger;
}

const v1 = planned();
const ALL = ['Namespace', 'ClusterTrustBundle', 'Secret', 'ConfigMap'];

const secretChanged: Partial<SyncSources> = {
  version: 'v-2',
  pullSecret: {
    metadata: { name: 'kcp-pull', namespace: 'kcp-system' },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': 'eyJhdXRocyI6e319' },
  },
};
const bundleChanged: Partial<SyncSources> = {
  version: 'v-2',
  clusterTrustBundle: {
    metadata: { name: 'rt-bootstrapper-k3d.test:ctb:1' },
    spec: { signerName: 'rt-bootstrapper-k3d.test/ctb', trustBundle: 'PEM 2' },
  },
};
const config = JSON.parse(seedConfigText()) as { overrides: Record<string, string> };
config.overrides = { ...config.overrides, 'changed.example': 'mirror.example.com' };
const configChanged: Partial<SyncSources> = {
  version: 'v-2',
  configMap: {
    metadata: { name: 'rt-bootstrapper-config', namespace: 'kcp-system' },
    data: { 'rt-bootstrapper-config.json': JSON.stringify(config) },
  },
};

describe('which objects of the set a pass writes', () => {
  const written = ledgerAfter(v1).get('kcp-system/rt');

  test('one source changed: that object, nothing else', () => {
    for (const [what, over, want] of [
      ['the pull Secret', secretChanged, ['Secret']],
      ['the trust bundle', bundleChanged, ['ClusterTrustBundle']],
      ['the config', configChanged, ['ConfigMap']],
    ] as const) {
      const writes = setWrites(planned(over), { written, held: 'v-1', full: false });
      assert.deepEqual(kinds(writes), want, what);
    }
  });

  test('two sources changed: both, in the set order', () => {
    const both = planned({ ...secretChanged, ...bundleChanged, version: 'v-3' });
    assert.deepEqual(kinds(setWrites(both, { written, held: 'v-1', full: false })), [
      'ClusterTrustBundle',
      'Secret',
    ]);
    const all = planned({ ...secretChanged, ...bundleChanged, ...configChanged, version: 'v-4' });
    assert.deepEqual(kinds(setWrites(all, { written, held: 'v-1', full: false })), [
      'ClusterTrustBundle',
      'Secret',
      'ConfigMap',
    ]);
  });

  test('the same set again: nothing at all (a pass that only had to find the trust bundle API again)', () => {
    assert.deepEqual(kinds(setWrites(v1, { written, held: 'v-1', full: false })), []);
  });

  test('the whole set: forced passes, nothing known, or a record that is not the set the status names', () => {
    const next = planned(secretChanged);
    for (const [what, input] of [
      ['a forced pass', { written, held: 'v-1', full: true }],
      ['nothing written by this process (a restart)', { written: undefined, held: 'v-1', full: false }],
      ['another writer committed another set since', { written, held: 'v-other', full: false }],
      ['no set held yet (an install)', { written, held: undefined, full: false }],
      [
        'nothing committed yet (a first pass that did not finish)',
        { written: ledgerAfter(v1.slice(0, 2), false).get('kcp-system/rt'), held: 'v-1', full: false },
      ],
    ] as const)
      assert.deepEqual(kinds(setWrites(next, input)), ALL, what);
  });

  test('a pass that failed halfway: the next writes what is still missing', () => {
    const next = planned({ ...bundleChanged, ...secretChanged, version: 'v-2' });
    const ledger = ledgerAfter(v1);
    // The bundle got through, the Secret did not: the status still says v-1.
    const bundle = next.find((o) => o.kind === 'ClusterTrustBundle');
    assert.ok(bundle);
    ledger.wrote('kcp-system/rt', bundle);
    assert.deepEqual(
      kinds(setWrites(next, { written: ledger.get('kcp-system/rt'), held: 'v-1', full: false })),
      ['Secret'],
    );
  });

  test('a source changed back (a rollback): what differs from the last write, whatever the set it came with', () => {
    const ledger = ledgerAfter(v1);
    const v2 = planned(secretChanged);
    for (const o of setWrites(v2, { written: ledger.get('kcp-system/rt'), held: 'v-1', full: false }))
      ledger.wrote('kcp-system/rt', o);
    ledger.committed('kcp-system/rt', 'v-2');
    const back = planned({ version: 'v-3' });
    assert.deepEqual(
      kinds(setWrites(back, { written: ledger.get('kcp-system/rt'), held: 'v-2', full: false })),
      ['Secret'],
    );
  });

  test('a renamed pull Secret (the config names another) is a new object: written with the config', () => {
    const renamed = JSON.parse(seedConfigText()) as { imagePullSecret: { name: string } };
    renamed.imagePullSecret.name = 'other-credentials';
    const next = planned({
      version: 'v-2',
      configMap: {
        metadata: { name: 'rt-bootstrapper-config', namespace: 'kcp-system' },
        data: { 'rt-bootstrapper-config.json': JSON.stringify(renamed) },
      },
    });
    const writes = setWrites(next, { written, held: 'v-1', full: false });
    assert.deepEqual(kinds(writes), ['Secret', 'ConfigMap']);
    assert.equal(writes[0]?.metadata?.name, 'other-credentials');
  });
});

describe('what the ledger keeps', () => {
  test('per runtime, the last write of each set object, and the set of the last pass that finished', () => {
    const ledger = ledgerAfter(v1);
    const record = ledger.get('kcp-system/rt');
    assert.ok(record);
    assert.equal(record.committed, 'v-1');
    assert.deepEqual(
      [...record.versions.keys()],
      v1.map((o) => setObjectKey(o)),
    );
    assert.equal(ledger.get('kcp-system/other'), undefined);
    ledger.forget('kcp-system/rt');
    assert.equal(ledger.get('kcp-system/rt'), undefined);
    assert.equal(ledger.size, 0);
  });

  test('versions name content: the trust bundle at another apiVersion is the same object and content', () => {
    const bundle = v1.find((o) => o.kind === 'ClusterTrustBundle');
    assert.ok(bundle);
    const beta = { ...bundle, apiVersion: 'certificates.k8s.io/v1beta1' };
    assert.equal(setObjectKey(beta), setObjectKey(bundle));
    assert.equal(writtenVersionOf(beta), writtenVersionOf(bundle));
  });

  test("only the set's objects are set objects (the webhook's own are not recorded)", () => {
    assert.deepEqual(
      v1.map((o) => isSetObject(o)),
      [true, true, true, true],
    );
    assert.equal(isSetObject({ apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name: 'd' } }), false);
  });
});
