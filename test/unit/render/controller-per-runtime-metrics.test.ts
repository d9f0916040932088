import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  ControllerManifestError,
  renderControllerManifests,
} from '../../../src/render/controller-manifests.js';

const base = { image: 'example.com/rtb:1', pullSecretName: 'registry-credentials' } as const;
const argsOf = (o: Parameters<typeof renderControllerManifests>[0]): string[] =>
  renderControllerManifests(o).deployment.spec?.template.spec?.containers[0]?.args ?? [];

describe('rtb render controller --per-runtime-metrics', () => {
  test('direct mode passes the opt-in to the controller; off by default', () => {
    assert.ok(!argsOf({ ...base, mode: 'direct' }).includes('--per-runtime-metrics'));
    assert.ok(argsOf({ ...base, mode: 'direct', perRuntimeMetrics: true }).includes('--per-runtime-metrics'));
  });

  test('annotate mode has no runtimes of its own to label: refused', () => {
    assert.throws(
      () => renderControllerManifests({ ...base, mode: 'annotate', perRuntimeMetrics: true }),
      ControllerManifestError,
    );
  });
});
