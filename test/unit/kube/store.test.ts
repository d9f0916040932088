import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Store, StoreKeyError, objectKey, type KubeObject } from '../../../src/kube/store.js';

const o = (name: string, resourceVersion?: string, namespace?: string): KubeObject => ({
  metadata: { name, namespace, resourceVersion },
});

void describe('objectKey', () => {
  void test('is namespace/name, or name when cluster-scoped', () => {
    assert.equal(objectKey(o('s', '1', 'kcp-system')), 'kcp-system/s');
    assert.equal(objectKey(o('ctb', '1')), 'ctb');
    assert.equal(objectKey(o('ctb', '1', '')), 'ctb');
    assert.throws(() => objectKey({}), StoreKeyError);
    assert.throws(() => objectKey(o('')), StoreKeyError);
  });
});

void describe('Store', () => {
  void test('upsert and remove report their change', () => {
    const s = new Store<KubeObject>();
    assert.equal(s.upsert(o('a', '1', 'ns')).type, 'add');
    const upd = s.upsert(o('a', '2', 'ns'));
    assert.ok(upd.type === 'update');
    assert.equal(upd.old.metadata?.resourceVersion, '1');
    assert.equal(s.remove(o('missing', '3', 'ns')), undefined);
    assert.deepEqual(s.remove(o('a', '4', 'ns')), {
      type: 'delete',
      obj: o('a', '4', 'ns'),
      finalStateUnknown: false,
    });
    assert.equal(s.size, 0);
  });

  void test('replace swaps the content and returns the difference by resourceVersion', () => {
    const s = new Store<KubeObject>();
    s.replace([o('same', '1'), o('changed', '1'), o('gone', '1')]);
    const changes = s.replace([o('same', '1'), o('changed', '2'), o('new', '1')]);
    assert.deepEqual(
      changes.map(
        (c) =>
          `${c.type} ${c.obj.metadata?.name ?? ''}${c.type === 'delete' && c.finalStateUnknown ? ' (unknown)' : ''}`,
      ),
      ['update changed', 'add new', 'delete gone (unknown)'],
    );
    assert.deepEqual(s.keys().sort(), ['changed', 'new', 'same']);
    assert.deepEqual(
      s.replace([]).map((c) => c.type),
      ['delete', 'delete', 'delete'],
    );
    assert.equal(s.size, 0);
  });
});
