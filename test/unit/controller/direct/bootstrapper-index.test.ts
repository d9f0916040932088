import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RuntimeBootstrapper } from '../../../../src/api/runtime-bootstrapper.js';
import { BootstrapperIndex } from '../../../../src/controller/direct/bootstrapper-index.js';

const rb = (name: string, runtimeID = name, secret?: string): RuntimeBootstrapper => ({
  metadata: { name, namespace: 'kcp-system' },
  spec: { runtimeID, ...(secret !== undefined ? { kubeconfigSecretRef: { name: secret } } : {}) },
});

describe('the index of RuntimeBootstrappers', () => {
  test('by runtime ID and by kubeconfig Secret (KIM’s name by default)', () => {
    const index = new BootstrapperIndex();
    index.put(rb('a'));
    index.put(rb('b', 'b', 'shared'));
    index.put(rb('c', 'c', 'shared'));
    assert.equal(index.keyOfRuntime('a'), 'kcp-system/a');
    assert.deepEqual(index.keysOfSecret('kcp-system', 'kubeconfig-a'), ['kcp-system/a']);
    assert.deepEqual([...index.keysOfSecret('kcp-system', 'shared')].sort(), [
      'kcp-system/b',
      'kcp-system/c',
    ]);
    assert.deepEqual(index.keysOfSecret('other', 'shared'), []);
    assert.equal(index.keyOfRuntime('nope'), undefined);
  });

  test('a changed reference moves the CR; a deleted CR is gone', () => {
    const index = new BootstrapperIndex();
    index.put(rb('a', 'rt-1', 'old'));
    index.put(rb('a', 'rt-2', 'new'));
    assert.equal(index.keyOfRuntime('rt-1'), undefined);
    assert.equal(index.keyOfRuntime('rt-2'), 'kcp-system/a');
    assert.deepEqual(index.keysOfSecret('kcp-system', 'old'), []);
    assert.deepEqual(index.keysOfSecret('kcp-system', 'new'), ['kcp-system/a']);
    index.remove(rb('a', 'rt-2', 'new'));
    assert.equal(index.keyOfRuntime('rt-2'), undefined);
    assert.deepEqual(index.keysOfSecret('kcp-system', 'new'), []);
    index.remove(rb('a'));
  });

  test('a runtime ID belongs to the oldest CR naming it; a later one takes nothing, and either may go', () => {
    const at = (name: string, created: string, runtimeID = 'rt'): RuntimeBootstrapper => ({
      ...rb(name, runtimeID),
      metadata: { name, namespace: 'kcp-system', creationTimestamp: new Date(created) },
    });
    const index = new BootstrapperIndex();
    const holder = at('holder', '2026-01-01T00:00:00Z');
    const late = at('late', '2026-01-02T00:00:00Z');
    index.put(holder);
    index.put(late);
    assert.equal(index.keyOfRuntime('rt'), 'kcp-system/holder', 'the later CR takes nothing');
    assert.deepEqual(index.identityOf(late), {
      heldBy: 'kcp-system/holder',
      sharesKubeconfigWith: ['kcp-system/holder'],
    });
    assert.deepEqual(index.identityOf(holder), {
      heldBy: undefined,
      sharesKubeconfigWith: ['kcp-system/late'],
    });
    index.remove(late);
    assert.equal(index.keyOfRuntime('rt'), 'kcp-system/holder', 'deleting the later one leaves the holder');
    assert.deepEqual(index.identityOf(holder), { heldBy: undefined, sharesKubeconfigWith: [] });
    index.put(late);
    index.remove(holder);
    assert.equal(index.keyOfRuntime('rt'), 'kcp-system/late', 'deleting the holder hands the ID on');
    assert.deepEqual(index.keysOfRuntime('rt'), ['kcp-system/late']);
    // Same creation second: the smaller key holds it, whatever the order of events.
    const b = at('b', '2026-01-03T00:00:00Z', 'tie');
    const a = at('a', '2026-01-03T00:00:00Z', 'tie');
    index.put(b);
    index.put(a);
    assert.equal(index.keyOfRuntime('tie'), 'kcp-system/a');
  });
});
