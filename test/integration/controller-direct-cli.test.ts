import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { type RuntimeBootstrapper, runtimeBootstrappersPath } from '../../src/api/runtime-bootstrapper.js';
import { runtimeBootstrapperCrd } from '../../src/api/runtime-bootstrapper-crd.js';
import { runtimeCrd } from '../../src/api/crds.js';
import { ensureCrds } from '../../src/kube/crd.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { applyObjects } from '../../src/kube/apply.js';
import { useControlPlane } from '../support/control-plane.js';
import { spawnDirectController } from '../support/direct-controller-process.js';
import { eventually } from '../../src/envtest/eventually.js';
import { runtimeObject } from '../support/runtime-object.js';
import {
  coreOf,
  kubeconfigFor,
  markDeploymentAvailable,
  putKubeconfigSecret,
  putSources,
} from '../support/kcp.js';

const plane = useControlPlane({ clusters: ['kcp', 'rt-x'] });
const RB_PATH = runtimeBootstrappersPath('kcp-system');
const RUNTIME_PATH = '/apis/infrastructuremanager.kyma-project.io/v1/namespaces/kcp-system/runtimes';

describe('rtb controller --mode direct (the real process)', () => {
  let child: ChildProcess;
  let output = '';
  before(async () => {
    const kcp = plane().cluster('kcp');
    await ensureCrds(kcp.kubeConfig(), [runtimeBootstrapperCrd(), runtimeCrd()]);
    await putSources(kcp);
    await putKubeconfigSecret(
      kcp,
      'rt-x',
      await kubeconfigFor(plane().cluster('rt-x'), 'rtb', ['system:masters']),
    );
    await applyObjects(kcp.kubeConfig(), [runtimeObject('rt-x', { tier: 'test' })]);
    child = spawnDirectController(kcp.kubeconfigPath, [
      '--auto-create',
      'tier=test',
      '--no-leader-elect',
      '--metrics-port',
      '0',
      '--coalesce',
      '200ms',
      '--webhook-image',
      'example.com/rtb:9.9.9',
      '--webhook-version',
      '9.9.9',
    ]);
    child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
  });
  after(async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  });

  test('creates a RuntimeBootstrapper for the Runtime, installs the release, and cleans up when the Runtime goes', async () => {
    const kcp = plane().cluster('kcp').kubeConfig();
    const rb = await eventually(
      async () => kubeRequest<RuntimeBootstrapper>(kcp, { method: 'GET', path: `${RB_PATH}/rt-x` }),
      30_000,
      `the RuntimeBootstrapper created for the Runtime (controller output:\n${output.slice(-2000)})`,
    );
    assert.equal(rb.spec.runtimeID, 'rt-x');
    await eventually(
      async () => {
        const r = await kubeRequest<RuntimeBootstrapper>(kcp, { method: 'GET', path: `${RB_PATH}/rt-x` });
        if (r.status?.state === 'Installing')
          await markDeploymentAvailable(plane().cluster('rt-x')).catch(() => undefined);
        return r.status?.state === 'Ready' ? r : undefined;
      },
      30_000,
      'Ready',
    );
    const ready = await kubeRequest<RuntimeBootstrapper>(kcp, { method: 'GET', path: `${RB_PATH}/rt-x` });
    assert.equal(ready.status?.webhookVersion, '9.9.9');
    // Logs are JSON lines.
    assert.ok(
      output
        .split('\n')
        .filter(Boolean)
        .some((l) => (JSON.parse(l) as { msg?: string }).msg === 'direct mode started'),
    );

    await kubeRequest(kcp, { method: 'DELETE', path: `${RUNTIME_PATH}/rt-x` });
    await eventually(
      async () => {
        try {
          await kubeRequest(kcp, { method: 'GET', path: `${RB_PATH}/rt-x` });
          return undefined;
        } catch {
          return true;
        }
      },
      30_000,
      'the RuntimeBootstrapper to go with its Runtime',
    );
    const left = await coreOf(plane().cluster('rt-x')).listSecretForAllNamespaces({
      labelSelector: 'app.kubernetes.io/managed-by=rt-bootstrapper',
    });
    assert.equal(left.items.length, 0, 'the runtime was cleaned up');
  });

  test('SIGTERM stops it cleanly', async () => {
    child.kill('SIGTERM');
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    assert.equal(code, 0, output.slice(-2000));
  });
});
