/**
 * A runtime ID belongs to one RuntimeBootstrapper: a second CR naming it is refused service with
 * a condition naming the holder, while the holder and the runtime's drift reports keep working;
 * deleting the second leaves the holder as it was, and deleting the holder hands the ID on. Two CRs
 * that name one kubeconfig Secret are warned of it. The CRD refuses a runtime ID that is not a DNS
 * label. All on real API servers, with the drift listener.
 */
import { CoreV1Api } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { RuntimeBootstrapper } from '../../src/api/runtime-bootstrapper.js';
import { newRuntimeBootstrapper } from '../../src/api/runtime-bootstrapper.js';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import { eventually } from '../../src/envtest/eventually.js';
import { statusCodeOf } from '../../src/kube/kube-errors.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { useControlPlane } from '../support/control-plane.js';
import { reportPullSecretDriftTo } from '../support/drift-report.js';
import { DirectFleet, conditionOf as condition } from '../support/direct-fleet.js';
import { RB_PATH } from '../support/kcp.js';
import { eventuallyFailsWith } from '../support/fails-with.js';

const ID = 'rt-id';
const DOMAIN = `${ID}.kyma.example.com`;
const plane = useControlPlane({ clusters: ['kcp', 'rt'] });
const kcp = () => plane().cluster('kcp');
const rt = () => plane().cluster('rt');
const fleet = new DirectFleet(kcp);
const read = fleet.readRb;
const create = (name: string, runtimeId: string): Promise<unknown> => {
  const body = newRuntimeBootstrapper(runtimeId, 'kcp-system', { annotations: { 'skr-domain': DOMAIN } });
  return kubeRequest(kcp().kubeConfig(), {
    method: 'POST',
    path: RB_PATH,
    body: { ...body, metadata: { ...body.metadata, name } },
  });
};
const remove = (name: string): Promise<unknown> =>
  kubeRequest(kcp().kubeConfig(), { method: 'DELETE', path: `${RB_PATH}/${name}` });
const ready = (name: string): Promise<RuntimeBootstrapper> => fleet.waitReady(name, rt());

/** A drift report of the runtime, and the pull Secret it says was deleted coming back. */
async function driftRepaired(): Promise<void> {
  const core = rt().kubeConfig().makeApiClient(CoreV1Api);
  await core.deleteNamespacedSecret({ name: 'registry-credentials', namespace: RUNTIME_NAMESPACE });
  const reply = await reportPullSecretDriftTo(fleet.direct, ID, DOMAIN);
  assert.equal(reply.status, 202, reply.body);
  await eventually(
    () => core.readNamespacedSecret({ name: 'registry-credentials', namespace: RUNTIME_NAMESPACE }),
    20_000,
    'the pull Secret restored',
  );
}

describe('one RuntimeBootstrapper per runtime ID', () => {
  fleet.use(() => ({ [ID]: rt() }), { withDriftListener: true });

  test('the CRD refuses a runtime ID that is not a DNS label', async () => {
    for (const bad of ['../x', 'Rt', 'rt\u202e', 'rt_1', '-rt']) {
      const error = await create(`bad-${Buffer.from(bad).toString('hex')}`, bad).catch((e: unknown) => e);
      assert.equal(statusCodeOf(error), 422, bad);
    }
  });

  test('a second CR for a held runtime ID is refused, naming the holder; the holder and its drift reports keep working', async () => {
    await create('first', ID);
    await ready('first');
    await create('second', ID);
    const second = await fleet.waitCondition('second', 'RuntimeID', { status: 'False' }, 20_000);
    assert.equal(condition(second, 'RuntimeID')?.reason, 'HeldByAnother');
    assert.match(condition(second, 'RuntimeID')?.message ?? '', /kcp-system\/first/);
    assert.ok(!(second.metadata.finalizers ?? []).length, 'the refused CR holds no finalizer');
    // Both name the default kubeconfig Secret of the ID: the holder is warned of the other.
    const first = await fleet.waitCondition('first', 'KubeconfigExclusive', { status: 'False' }, 20_000);
    assert.equal(first.status?.state, 'Ready');
    assert.match(condition(first, 'KubeconfigExclusive')?.message ?? '', /kcp-system\/second/);
    await driftRepaired();
  });

  test('deleting the refused CR touches nothing; the holder keeps the ID and its warning goes', async () => {
    await remove('second');
    await eventuallyFailsWith(() => read('second'), 404, 20_000, 'the second CR gone');
    const first = await fleet.waitCondition('first', 'KubeconfigExclusive', { status: 'True' }, 20_000);
    assert.equal(first.status?.state, 'Ready');
    await driftRepaired();
  });

  test('deleting the holder hands the ID to a CR that was refused', async () => {
    await create('later', ID);
    await fleet.waitCondition('later', 'RuntimeID', { status: 'False' }, 20_000);
    await remove('first');
    const later = await ready('later');
    assert.equal(condition(later, 'RuntimeID')?.status, 'True', 'the refusal is lifted');
    await driftRepaired();
  });
});
