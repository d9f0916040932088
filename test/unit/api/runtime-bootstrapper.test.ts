import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  kubeconfigSecretOf,
  newRuntimeBootstrapper,
  runtimeBootstrappersPath,
} from '../../../src/api/runtime-bootstrapper.js';

test('the RuntimeBootstrappers path of a namespace', () => {
  assert.equal(
    runtimeBootstrappersPath('kcp-system'),
    '/apis/rt-bootstrapper.kyma-project.io/v1alpha1/namespaces/kcp-system/runtimebootstrappers',
  );
});

test('a new RuntimeBootstrapper is named after its runtime and defaults to KIM’s kubeconfig Secret', () => {
  const rb = newRuntimeBootstrapper('rt-1', 'kcp-system', {
    annotations: { 'skr-domain': 'rt-1.example.com' },
  });
  assert.deepEqual(rb, {
    apiVersion: 'rt-bootstrapper.kyma-project.io/v1alpha1',
    kind: 'RuntimeBootstrapper',
    metadata: { name: 'rt-1', namespace: 'kcp-system', annotations: { 'skr-domain': 'rt-1.example.com' } },
    spec: { runtimeID: 'rt-1' },
  });
  assert.deepEqual(kubeconfigSecretOf(rb), {
    name: 'kubeconfig-rt-1',
    namespace: 'kcp-system',
    key: 'config',
  });
});
