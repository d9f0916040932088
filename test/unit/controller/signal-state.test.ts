import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { SignalState } from '../../../src/controller/annotate/signal-decision.js';
import {
  parseSignalState,
  serializeSignalState,
} from '../../../src/controller/annotate/signal-state-store.js';

describe('the persisted signal state', () => {
  test('round-trips', () => {
    const state: SignalState = {
      version: 'abc',
      changeTime: '2026-01-01T00:00:00.000Z',
      phase: 'Signalling',
      sources: { pullSecret: 'p', clusterTrustBundle: undefined, configMap: 'm' },
    };
    assert.deepEqual(parseSignalState(serializeSignalState(state)), {
      version: 'abc',
      changeTime: '2026-01-01T00:00:00.000Z',
      phase: 'Signalling',
      sources: { pullSecret: 'p', configMap: 'm' },
    });
  });

  test('round-trips the watched sources, manifests ConfigMap included', () => {
    const state: SignalState = {
      version: 'abc',
      changeTime: '2026-01-01T00:00:00.000Z',
      phase: 'Completed',
      completedAt: '2026-01-01T00:00:01.000Z',
      sources: { pullSecret: 'p', configMap: 'm', manifestsConfigMap: 'r' },
      watched: ['pullSecret', 'configMap', 'manifestsConfigMap'],
    };
    assert.deepEqual(parseSignalState(serializeSignalState(state)), state);
  });

  test('absent, unreadable or incomplete state counts as none', () => {
    for (const text of [
      undefined,
      '',
      '{',
      'null',
      '[]',
      '{"version":"","changeTime":"x","phase":"Completed"}',
      '{"version":"v","phase":"Completed"}',
      '{"version":"v","changeTime":"x","phase":"Unknown"}',
      // What the decisions compare when watched sources change must be well-formed.
      '{"version":"v","changeTime":"x","phase":"Completed","watched":"manifestsConfigMap"}',
      '{"version":"v","changeTime":"x","phase":"Completed","watched":["nope"]}',
      '{"version":"v","changeTime":"x","phase":"Completed","sources":[]}',
      '{"version":"v","changeTime":"x","phase":"Completed","sources":{"configMap":1}}',
      '{"version":"v","changeTime":"x","phase":"Completed","sources":{"other":"v"}}',
    ]) {
      assert.equal(parseSignalState(text), undefined, String(text));
    }
  });
});
