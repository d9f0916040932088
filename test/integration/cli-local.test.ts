import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { isRunning } from '../support/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { runLocal } from '../support/run-local.js';

describe('rtb local (the main job)', () => {
  test('--once: KCP and runtimes, controller in direct mode, the seed Pod mutated everywhere, a rotation reaching both', async () => {
    const run = await runLocal(['--once', '--webhooks', 'process']);
    assert.equal(run.code, 0, run.out);
    assert.match(run.out, /^webhooks: in this process \(--webhooks process\)$/m);
    assert.match(run.out, /kube-apiserver v1\.\d+\.\d+, etcd v3\.6\.\d+/);
    for (const c of ['kcp', 'runtime-1', 'runtime-2'])
      assert.match(
        run.out,
        new RegExp(`cluster ${c}\\s+https://127\\.0\\.0\\.1:\\d+\\s+kubeconfig: /\\S+/${c}/kubeconfig`),
      );
    assert.match(run.out, /RuntimeBootstrapper runtime-1: Ready, config version [0-9a-f]{16}/);
    assert.match(run.out, /RuntimeBootstrapper runtime-2: Ready, config version [0-9a-f]{16}/);
    for (const manipulation of [
      /registry rewrite\s+pause: replace\.me\/kyma-project\/rt-bootstrapper\/pause:e2e → ghcr\.io\/kyma-project\/rt-bootstrapper\/pause:e2e/,
      /FIPS mode\s+pause: env KYMA_FIPS_MODE_ENABLED=true/,
      /trust bundle mount pause: rt-bootstrapper-certs at \/etc\/ssl\/certs \(read-only\)/,
      /trust bundle\s+volume rt-bootstrapper-certs: ClusterTrustBundle rt-bootstrapper-k3d\.test:ctb:1/,
      /pull secret\s+imagePullSecrets \+= registry-credentials/,
    ]) {
      assert.ok(
        (run.out.match(new RegExp(manipulation.source, 'g'))?.length ?? 0) >= 2,
        `${manipulation.source} on both runtimes`,
      );
    }
    // The rotation reaches both runtimes and the webhook on each applies the new mirror.
    assert.match(run.out, /runtime-1: set [0-9a-f]{16} applied \d+ ms after the change/);
    assert.match(run.out, /runtime-2: set [0-9a-f]{16} applied \d+ ms after the change/);
    assert.equal(
      run.out.match(/→ mirror\.landscape\.local\/ghcr\/kyma-project\/rt-bootstrapper\/pause:e2e/g)?.length,
      2,
    );
    assert.match(
      run.out,
      /as stored by the API server after the webhook:[\s\S]*image: ghcr\.io\/kyma-project/,
    );
    assert.match(run.out, /stopped\.\n$/);
  });

  test('Ctrl-C (SIGINT) stops every process it started and exits 0', async () => {
    const run = await runLocal(['--webhooks', 'process'], { signal: 'SIGINT' });
    assert.equal(run.code, 0, run.out);
    assert.match(run.out, /SIGINT: stopping the local landscape/);
    assert.ok(run.pids.length >= 2, `etcd and kube-apiserver were children: ${run.pids.join(',')}`);
    await eventually(() => (run.pids.some(isRunning) ? undefined : true), 10_000, 'children to end');
  });
});
