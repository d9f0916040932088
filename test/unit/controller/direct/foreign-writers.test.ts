import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import {
  describeForeignWrites,
  foreignWritesAfterOurs,
  type WrittenObject,
} from '../../../../src/controller/direct/foreign-writers.js';

const OWN = ['rt-bootstrapper'];
const obj = (entries: WrittenObject['managedFields']): WrittenObject => ({
  description: 'Deployment kyma-system/rt-bootstrapper-controller-manager',
  managedFields: entries,
});

describe('foreignWritesAfterOurs', () => {
  it('reports KIM writing after our last write', () => {
    const writes = foreignWritesAfterOurs(
      [
        obj([
          { manager: 'rt-bootstrapper', operation: 'Apply', time: '2026-01-01T10:00:00Z' },
          { manager: 'kim-bootstrapper', operation: 'Apply', time: '2026-01-01T10:05:00Z' },
        ]),
      ],
      OWN,
    );
    assert.deepEqual(writes, [
      {
        object: 'Deployment kyma-system/rt-bootstrapper-controller-manager',
        manager: 'kim-bootstrapper',
        time: '2026-01-01T10:05:00.000Z',
      },
    ]);
    assert.match(
      describeForeignWrites(writes),
      /kim-bootstrapper wrote Deployment .* at 2026-01-01T10:05:00.000Z/,
    );
  });

  it('ignores a stale entry older than ours, and one in the same second', () => {
    for (const kimTime of ['2026-01-01T09:00:00Z', '2026-01-01T10:00:00Z']) {
      const writes = foreignWritesAfterOurs(
        [
          obj([
            { manager: 'kim-bootstrapper', operation: 'Apply', time: kimTime },
            { manager: 'rt-bootstrapper', operation: 'Apply', time: '2026-01-01T10:00:00Z' },
          ]),
        ],
        OWN,
      );
      assert.deepEqual(writes, [], kimTime);
    }
  });

  it('compares with the latest of our own managers', () => {
    const writes = foreignWritesAfterOurs(
      [
        obj([
          { manager: 'rt-bootstrapper', time: '2026-01-01T08:00:00Z' },
          { manager: 'rt-bootstrapper-webhook', time: '2026-01-01T11:00:00Z' },
          { manager: 'kim-bootstrapper', time: '2026-01-01T10:00:00Z' },
        ]),
      ],
      ['rt-bootstrapper', 'rt-bootstrapper-webhook'],
    );
    assert.deepEqual(writes, []);
  });

  it('says nothing of objects we never wrote, or of managers it does not watch', () => {
    assert.deepEqual(
      foreignWritesAfterOurs([obj([{ manager: 'kim-bootstrapper', time: '2026-01-01T10:00:00Z' }])], OWN),
      [],
    );
    assert.deepEqual(
      foreignWritesAfterOurs(
        [
          obj([
            { manager: 'rt-bootstrapper', time: '2026-01-01T10:00:00Z' },
            { manager: 'kube-controller-manager', operation: 'Update', time: '2026-01-01T10:09:00Z' },
          ]),
        ],
        OWN,
      ),
      [],
    );
  });

  it('describes several writes by the first and a count', () => {
    const w = {
      object: 'ConfigMap kyma-system/rt-bootstrapper-config',
      manager: 'kim-bootstrapper',
      time: 't',
    };
    assert.match(describeForeignWrites([w, w, w]), /\(and 2 more\)/);
    assert.match(describeForeignWrites([]), /only rt-bootstrapper/);
  });
});
