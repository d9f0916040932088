import type { V1ObjectMeta, V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { KubeApiError } from '../../../src/kube/kube-errors.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import {
  COPIED_FROM_ANNOTATION,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
} from '../../../src/api/managed-labels.js';
import {
  isOurCopy,
  planRenamedCopyRemoval,
  renamedCopies,
  type SecretId,
} from '../../../src/webhook/renamed-copies.js';
import { RenamedCopySweeper, type RenamedCopyCalls } from '../../../src/webhook/renamed-copy-sweeper.js';
import { createWebhookMetrics } from '../../../src/webhook/webhook-metrics.js';

const ours = { [MANAGED_BY_LABEL]: MANAGED_BY_VALUE };

/** A copy of `kyma-system/<name>` in `namespace`, as the copier writes it. */
const copy = (namespace: string, name: string, uid = `${namespace}-${name}`): V1ObjectMeta => ({
  namespace,
  name,
  uid,
  labels: { ...ours },
  annotations: { [COPIED_FROM_ANNOTATION]: `kyma-system/${name}` },
});

const pod = (name: string, pullSecrets: string[], phase = 'Running'): V1Pod => ({
  metadata: { name },
  spec: { containers: [], imagePullSecrets: pullSecrets.map((n) => ({ name: n })) },
  status: { phase },
});

describe('copies of earlier pull-Secret names', () => {
  test('only Secrets with our label and a copied-from annotation naming their own name are our copies', () => {
    assert.equal(isOurCopy(copy('a', 'old')), true);
    assert.equal(isOurCopy({ ...copy('a', 'old'), labels: {} }), false, 'no label: somebody else’s');
    assert.equal(
      isOurCopy({ ...copy('a', 'old'), labels: { [MANAGED_BY_LABEL]: 'helm' } }),
      false,
      'another manager',
    );
    assert.equal(isOurCopy({ ...copy('a', 'old'), annotations: {} }), false, 'the KCP’s own objects');
    assert.equal(
      isOurCopy({ ...copy('a', 'old'), annotations: { [COPIED_FROM_ANNOTATION]: 'kyma-system/other' } }),
      false,
      'copied-from names another Secret',
    );
    assert.equal(
      isOurCopy({ ...copy('a', 'old'), annotations: { [COPIED_FROM_ANNOTATION]: 'old' } }),
      false,
      'no namespace in copied-from',
    );
  });

  test('stale: ours and not named as the pull Secret in force', () => {
    const secrets = [
      copy('a', 'old'),
      copy('a', 'new'),
      copy('b', 'older'),
      { ...copy('c', 'old'), labels: {} },
      { namespace: 'kyma-system', name: 'rt-bootstrapper-webhook-tls', labels: { ...ours } },
    ];
    assert.deepEqual(
      renamedCopies(secrets, 'new').map((s) => `${s.namespace}/${s.name}`),
      ['a/old', 'b/older'],
    );
    assert.deepEqual(
      renamedCopies(secrets, 'old').map((s) => `${s.namespace}/${s.name}`),
      ['a/new', 'b/older'],
    );
    assert.deepEqual(renamedCopies([copy('a', 'new')], 'new'), [], 'nothing stale after the copier');
  });

  test('a stale copy goes unless a Pod that has not ended still names it', () => {
    const stale: SecretId[] = [
      { namespace: 'a', name: 'old', uid: '1' },
      { namespace: 'b', name: 'old', uid: '2' },
      { namespace: 'c', name: 'old', uid: '3' },
      { namespace: 'd', name: 'old', uid: '4' },
    ];
    const plan = planRenamedCopyRemoval({
      stale,
      podsByNamespace: new Map([
        ['a', [pod('runs', ['old']), pod('also', ['other', 'old'], 'Pending')]],
        ['b', [pod('new', ['new']), pod('none', [])]],
        ['c', [pod('done', ['old'], 'Succeeded'), pod('failed', ['old'], 'Failed')]],
      ]),
    });
    assert.deepEqual(
      plan.remove.map((s) => s.namespace),
      ['b', 'c', 'd'],
    );
    assert.deepEqual(plan.kept, [{ namespace: 'a', name: 'old', uid: '1', pods: 2 }]);
  });
});

/** Calls backed by an in-memory cluster. */
function fakeCalls(
  secrets: V1ObjectMeta[],
  pods: Map<string, V1Pod[]>,
): RenamedCopyCalls & {
  deleted: string[];
  listed: string[];
  forbidList: boolean;
} {
  const calls = {
    deleted: [] as string[],
    listed: [] as string[],
    forbidList: false,
    listManagedSecrets: () => {
      if (calls.forbidList) return Promise.reject(new KubeApiError('forbidden', { statusCode: 403 }));
      return Promise.resolve(secrets.map((s) => ({ ...s })));
    },
    listLivePods: (namespace: string) => {
      calls.listed.push(namespace);
      return Promise.resolve(pods.get(namespace) ?? []);
    },
    deleteSecret: (id: SecretId) => {
      const i = secrets.findIndex((s) => s.namespace === id.namespace && s.name === id.name);
      if (i < 0) return Promise.reject(new KubeApiError('not found', { statusCode: 404 }));
      if (secrets[i]?.uid !== id.uid) return Promise.reject(new KubeApiError('uid', { statusCode: 409 }));
      secrets.splice(i, 1);
      calls.deleted.push(`${id.namespace}/${id.name}`);
      return Promise.resolve({});
    },
  };
  return calls;
}

describe('the renamed-copy sweeper', () => {
  const make = (calls: RenamedCopyCalls, name: () => string | undefined): RenamedCopySweeper =>
    new RenamedCopySweeper({
      calls,
      currentName: name,
      metrics: createWebhookMetrics(new Registry()),
      logger: silentLogger(),
    });

  test('removes unreferenced copies of earlier names, keeps referenced ones, reads Pods only where needed', async () => {
    const secrets = [copy('a', 'old'), copy('a', 'new'), copy('b', 'old'), copy('c', 'new')];
    const calls = fakeCalls(secrets, new Map([['a', [pod('p', ['old'])]]]));
    const outcome = await make(calls, () => 'new').sweep();
    assert.deepEqual(outcome, { removed: 1, kept: 1, failed: 0, forbidden: false });
    assert.deepEqual(calls.deleted, ['b/old']);
    assert.deepEqual(calls.listed.sort(), ['a', 'b'], 'no Pod list where nothing is stale');
    assert.deepEqual(
      secrets.map((s) => `${s.namespace}/${s.name}`),
      ['a/old', 'a/new', 'c/new'],
    );
  });

  test('idempotent: a second sweep finds nothing to do; no sweep before a configuration', async () => {
    const secrets = [copy('a', 'old'), copy('a', 'new')];
    const calls = fakeCalls(secrets, new Map());
    const sweeper = make(calls, () => 'new');
    assert.equal((await sweeper.sweep()).removed, 1);
    assert.deepEqual(await sweeper.sweep(), { removed: 0, kept: 0, failed: 0, forbidden: false });
    const none = fakeCalls([copy('a', 'old')], new Map());
    assert.equal((await make(none, () => undefined).sweep()).removed, 0);
    assert.deepEqual(none.deleted, []);
  });

  test('a Secret made again under the name since the list (another uid) is not removed', async () => {
    const secrets = [copy('a', 'old', 'first')];
    const calls = fakeCalls(secrets, new Map());
    const stale = { ...calls, listManagedSecrets: () => Promise.resolve([copy('a', 'old', 'first')]) };
    secrets[0] = copy('a', 'old', 'second');
    assert.deepEqual(await make(stale, () => 'new').sweep(), {
      removed: 0,
      kept: 0,
      failed: 0,
      forbidden: false,
    });
    assert.equal(secrets.length, 1);
  });

  test('without the right to list Secrets it says so and does nothing', async () => {
    const calls = fakeCalls([copy('a', 'old')], new Map());
    calls.forbidList = true;
    assert.deepEqual(await make(calls, () => 'new').sweep(), {
      removed: 0,
      kept: 0,
      failed: 0,
      forbidden: true,
    });
  });

  test('follow sweeps on the first name and on a rename, not on a repeat; a kept copy is looked at again', async () => {
    const secrets = [copy('a', 'old'), copy('a', 'new')];
    const pods = new Map([['a', [pod('p', ['old'])]]]);
    const calls = fakeCalls(secrets, pods);
    let name = 'new';
    const sweeper = new RenamedCopySweeper({
      calls,
      currentName: () => name,
      metrics: createWebhookMetrics(new Registry()),
      logger: silentLogger(),
      resweepMs: 20,
    });
    let lists = 0;
    const counted = calls.listManagedSecrets.bind(calls);
    calls.listManagedSecrets = () => {
      lists++;
      return counted();
    };
    sweeper.follow();
    sweeper.follow();
    await waitFor(() => lists >= 1);
    assert.deepEqual(calls.deleted, [], 'kept: a live Pod names it');
    pods.set('a', []); // the Pod ended
    await waitFor(() => calls.deleted.length === 1);
    assert.deepEqual(calls.deleted, ['a/old']);
    name = 'newer';
    sweeper.follow();
    await waitFor(() => calls.deleted.length === 2);
    assert.deepEqual(calls.deleted, ['a/old', 'a/new']);
    const before = lists;
    sweeper.follow(); // same name: nothing
    await sleep(60);
    assert.equal(lists, before, 'nothing kept, nothing failed: no more sweeps');
    await sweeper.stop();
  });
});

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

async function waitFor(check: () => boolean, ms = 2_000): Promise<void> {
  const until = Date.now() + ms;
  while (!check()) {
    if (Date.now() > until) throw new Error('condition not met in time');
    await sleep(5);
  }
}
