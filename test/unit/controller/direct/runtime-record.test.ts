import type { KubernetesObject } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RuntimeRecords, type RuntimeRecord } from '../../../../src/controller/direct/runtime-record.js';

const secret: KubernetesObject = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'registry-credentials', namespace: 'kyma-system', annotations: {} },
};

/** kcp-system/rt in `records`: a forced pass owed, its certificate looked at, its drift certificate known. */
function known(records: RuntimeRecords): RuntimeRecord {
  const rt = records.of('kcp-system/rt');
  rt.forced = true;
  rt.servingCurrentUntil = 1;
  rt.driftNotAfter = 2;
  return rt;
}

describe('what the reconciler keeps of a runtime', () => {
  test('forgotten, a key leaves nothing behind: every server it wrote through, and no other key whose name it begins', () => {
    const records = new RuntimeRecords();
    const rt = known(records);
    rt.workloadsLookedAt = 3;
    rt.written.wrote('https://a:443', secret);
    rt.written.wrote('https://b:443', secret);
    records.of('kcp-system/rt-2').written.wrote('https://a:443', secret);
    records.forget('kcp-system/rt');
    assert.equal(records.peek('kcp-system/rt'), undefined);
    assert.equal(records.size, 1);
    assert.equal(records.peek('kcp-system/rt-2')?.written.size, 1);
    const again = records.of('kcp-system/rt');
    assert.deepEqual(
      [
        again.forced,
        again.servingCurrentUntil,
        again.driftNotAfter,
        again.workloadsLookedAt,
        again.written.size,
      ],
      [false, undefined, undefined, undefined, 0],
    );
  });

  test('handed over to another replica: what was written there and the drift certificate are no longer known', () => {
    const records = new RuntimeRecords();
    const rt = known(records);
    rt.written.wrote('https://a:443', secret);
    rt.written.committed('https://b:443', 'v-1');
    rt.handedOver();
    assert.equal(rt.written.size, 0);
    assert.equal(rt.driftNotAfter, undefined);
    // What this replica still knows of its own passes stays: a forced pass owed, the certificate's look.
    assert.equal(rt.forced, true);
    assert.equal(rt.servingCurrentUntil, 1);
  });
});
