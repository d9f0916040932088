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
});
