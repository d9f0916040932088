import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { RTB_FINALIZER, type RuntimeBootstrapper } from '../../../../src/api/runtime-bootstrapper.js';
import { needsReconcile } from '../../../../src/controller/direct/bootstrapper-events.js';
import { DRIFT_REPORTED_ANNOTATION, relayedReportAt } from '../../../../src/controller/direct/drift-relay.js';
import { statusChanged } from '../../../../src/controller/direct/status-builder.js';

const rb = (meta: Partial<RuntimeBootstrapper['metadata']> = {}, status?: RuntimeBootstrapper['status']) =>
  ({
    metadata: { name: 'rt', namespace: 'kcp-system', generation: 1, resourceVersion: '10', ...meta },
    spec: { runtimeID: 'rt' },
    ...(status ? { status } : {}),
  }) as RuntimeBootstrapper;

describe('which watched updates of a RuntimeBootstrapper need a reconcile', () => {
  test('our own writes come back and need none: a status write, the finalizer we add', () => {
    const fresh = rb();
    const withStatus = rb({ resourceVersion: '11' }, { state: 'Installing' });
    assert.equal(needsReconcile(fresh, withStatus), false);
    const finalized = rb({ resourceVersion: '12', finalizers: [RTB_FINALIZER] });
    assert.equal(needsReconcile(fresh, finalized), false);
    // Other controllers' finalizers are theirs.
    assert.equal(needsReconcile(finalized, rb({ finalizers: [RTB_FINALIZER, 'x/y'] })), false);
  });

  test('a spec change, a deletion, an annotation, our finalizer taken away: reconcile', () => {
    const base = rb({ finalizers: [RTB_FINALIZER], annotations: { a: '1' } });
    assert.equal(needsReconcile(base, rb({ ...base.metadata, generation: 2 })), true);
    assert.equal(
      needsReconcile(base, rb({ ...base.metadata, deletionTimestamp: new Date('2026-01-01T00:00:00Z') })),
      true,
    );
    assert.equal(needsReconcile(base, rb({ ...base.metadata, annotations: { a: '2' } })), true);
    assert.equal(needsReconcile(base, rb({ ...base.metadata, annotations: {} })), true);
    assert.equal(needsReconcile(base, rb({ ...base.metadata, finalizers: [] })), true);
    // The same annotations in another order are the same annotations.
    const two = rb({ ...base.metadata, annotations: { a: '1', b: '2' } });
    assert.equal(needsReconcile(two, rb({ ...base.metadata, annotations: { b: '2', a: '1' } })), false);
  });
});

describe('statusChanged', () => {
  const condition = {
    type: 'Installed' as const,
    status: 'True' as const,
    reason: 'Applied',
    message: 'ok',
    observedGeneration: 1,
    lastTransitionTime: '2026-01-01T00:00:00.000Z',
  };
  test('the same status with its keys in the API server order is unchanged', () => {
    const built = {
      state: 'Ready' as const,
      observedGeneration: 1,
      appliedVersion: 'v',
      conditions: [condition],
    };
    // As read back: keys sorted differently at every level.
    const read = JSON.parse(
      '{"appliedVersion":"v","conditions":[{"lastTransitionTime":"2026-01-01T00:00:00.000Z","message":"ok","observedGeneration":1,"reason":"Applied","status":"True","type":"Installed"}],"observedGeneration":1,"state":"Ready"}',
    ) as RuntimeBootstrapper['status'];
    assert.notEqual(JSON.stringify(read), JSON.stringify(built), 'the text differs');
    assert.equal(statusChanged(read, built), false);
    assert.equal(
      statusChanged(read, { ...built, appliedAt: undefined }),
      false,
      'an undefined member is absent',
    );
  });

  test('a changed value, condition or condition order is a change', () => {
    const built = { state: 'Ready' as const, conditions: [condition] };
    assert.equal(statusChanged(built, { ...built, state: 'Error' }), true);
    assert.equal(statusChanged(built, { ...built, conditions: [{ ...condition, message: 'other' }] }), true);
    assert.equal(statusChanged(undefined, built), true);
    assert.equal(statusChanged({}, {}), false);
  });

  test('a drift report relayed by another replica starts a repair, not a reconcile', () => {
    const base = rb({ annotations: { a: '1' } });
    const relayed = rb({ annotations: { a: '1', [DRIFT_REPORTED_ANNOTATION]: '2026-11-24T04:00:00.000Z' } });
    assert.equal(needsReconcile(base, relayed), false);
    // The owner measures the repair from the time the report was received, carried by the relay.
    assert.equal(relayedReportAt(base, relayed, 0), Date.parse('2026-11-24T04:00:00.000Z'));
    const again = rb({ annotations: { a: '1', [DRIFT_REPORTED_ANNOTATION]: '2026-11-24T04:00:01.000Z' } });
    assert.equal(relayedReportAt(relayed, again, 0), Date.parse('2026-11-24T04:00:01.000Z'));
    assert.equal(relayedReportAt(relayed, relayed, 0), undefined);
    // An unreadable time is still a report: measured from when it was seen.
    const garbled = rb({ annotations: { a: '1', [DRIFT_REPORTED_ANNOTATION]: 'yesterday' } });
    assert.equal(relayedReportAt(relayed, garbled, 42), 42);
    // Another annotation changing beside it still reconciles.
    assert.equal(
      needsReconcile(relayed, rb({ annotations: { ...again.metadata.annotations, a: '2' } })),
      true,
    );
  });
});
