/**
 * The Runtime mirror (`--auto-create`) on a real API server, with a RuntimeBootstrapper cache that
 * has not seen the create yet: the state of a replica right after its own create, or of the next
 * owner right after a handover. Every look again (a membership change) must read the truth
 * instead of racing what was already written.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { runtimeCrd } from '../../src/api/crds.js';
import type { RuntimeBootstrapper } from '../../src/api/runtime-bootstrapper.js';
import { runtimeBootstrapperCrd } from '../../src/api/runtime-bootstrapper-crd.js';
import { RuntimeMirror } from '../../src/controller/direct/runtime-mirror.js';
import { eventually } from '../../src/envtest/eventually.js';
import { ensureCrds } from '../../src/kube/crd.js';
import { UNFENCED } from '../../src/kube/lease-fence.js';
import { Store } from '../../src/kube/store.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { apiServerRequests } from '../support/apiserver-metrics.js';
import { useControlPlane } from '../support/control-plane.js';
import { coreOf, listRuntimeBootstrappers } from '../support/kcp.js';
import { createRuntime, kcpClients } from './controller-fixtures.js';

const plane = useControlPlane({ clusters: ['kcp'] });
const kcp = () => plane().cluster('kcp');

describe('the Runtime mirror with a cache behind the API server', () => {
  const membershipListeners = new Set<() => void>();
  let mirror: RuntimeMirror;

  before(async () => {
    await ensureCrds(kcp().kubeConfig(), [runtimeCrd(), runtimeBootstrapperCrd()]);
    await coreOf(kcp()).createNamespace({ body: { metadata: { name: 'kcp-system' } } });
    mirror = new RuntimeMirror({
      kcp: kcp().kubeConfig(),
      namespace: 'kcp-system',
      selector: '',
      // Never fed: it does not show the bootstrappers the mirror creates.
      bootstrappers: new Store<RuntimeBootstrapper>(),
      logger: silentLogger(),
      shard: {
        runOn: async (_id, work) => {
          await work(UNFENCED);
          return 'work';
        },
        onMembershipChange: (listener) => {
          membershipListeners.add(listener);
          return () => membershipListeners.delete(listener);
        },
      },
    });
    await mirror.start();
  });

  after(() => mirror.stop());

  test('creates each bootstrapper once, however often membership moves meanwhile', async () => {
    const conflictsBefore = await apiServerRequests(kcp(), 'POST', 'runtimebootstrappers', '409');
    const kim = kcpClients(kcp().kubeConfig());
    for (const id of ['rt-a', 'rt-b']) await createRuntime(kim, id);
    await eventually(
      async () => ((await listRuntimeBootstrappers(kcp())).length === 2 ? true : undefined),
      20_000,
      'both bootstrappers created',
    );
    // Each change of membership looks at every Runtime again, through the stale cache.
    const looks = async () =>
      (await apiServerRequests(kcp(), 'GET', 'runtimebootstrappers', '200')) +
      (await apiServerRequests(kcp(), 'POST', 'runtimebootstrappers', '409'));
    for (let i = 0; i < 3; i++) {
      const looksBefore = await looks();
      for (const listener of membershipListeners) listener();
      await eventually(
        async () => ((await looks()) >= looksBefore + 2 ? true : undefined),
        20_000,
        'a look at both',
      );
    }
    assert.equal(await apiServerRequests(kcp(), 'POST', 'runtimebootstrappers', '201'), 2);
    assert.equal(await apiServerRequests(kcp(), 'POST', 'runtimebootstrappers', '409'), conflictsBefore);
  });
});
