import type { V1ObjectMeta, V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { KubeApiError } from '../../../../src/kube/kube-errors.js';
import { silentLogger } from '../../../../src/telemetry/logger.js';
import {
  COPIED_FROM_ANNOTATION,
  MANAGED_BY_LABEL,
  MANAGED_BY_VALUE,
} from '../../../../src/api/managed-labels.js';
import {
  earlierNames,
  isOurCopy,
  isSecretName,
  namesStillPending,
  planNamespaceSweep,
  readRememberedNames,
  rememberName,
  REMEMBERED_NAMES_MAX,
  REMEMBERED_TEXT_MAX,
  writeRememberedNames,
  type NameAnswer,
} from '../../../../src/runtime-agent/pull-secret/renamed-copies.js';
import {
  RenamedCopySweeper,
  type RenamedCopyCalls,
} from '../../../../src/runtime-agent/pull-secret/renamed-copy-sweeper.js';
import { createWebhookMetrics } from '../../../../src/webhook/webhook-metrics.js';

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

  test('a Secret name is a DNS subdomain of at most 253 characters', () => {
    for (const ok of ['a', 'registry-credentials', 'a.b-c.d', '0', 'x'.repeat(253)])
      assert.equal(isSecretName(ok), true, ok);
    for (const bad of [
      '',
      'A',
      '-a',
      'a-',
      '.a',
      'a.',
      'a..b',
      'a.-b',
      'a-.b',
      'a_b',
      'a/b',
      'a\nb',
      'x'.repeat(254),
    ])
      assert.equal(isSecretName(bad), false, JSON.stringify(bad));
  });

  test('the record: newest first, bounded to 8 names, invalid and repeated names dropped, cut before it is split', () => {
    let names: string[] = [];
    for (let i = 0; i < 12; i++) names = rememberName(names, `n${i}`);
    assert.equal(names.length, REMEMBERED_NAMES_MAX);
    assert.deepEqual(names.slice(0, 2), ['n11', 'n10']);
    assert.deepEqual(rememberName(['a', 'b'], 'b'), ['b', 'a'], 'a name again moves to the front');
    assert.deepEqual(rememberName(['a'], 'Not_A_Name'), ['a']);
    assert.deepEqual(earlierNames(['new', 'old', 'older'], 'new'), ['old', 'older']);
    assert.deepEqual(readRememberedNames(writeRememberedNames(names)), names, 'round trip');
    assert.deepEqual(readRememberedNames(undefined), []);
    assert.deepEqual(readRememberedNames('a\nBAD\n\na\nb.c\n-x'), ['a', 'b.c']);
    // An admin's edit of any size: cut to the bound, the line the cut broke dropped.
    const long = `a\n${'b'.repeat(REMEMBERED_TEXT_MAX * 10)}`;
    assert.deepEqual(readRememberedNames(long), ['a']);
    // A name the cut broke is not read as a shorter name.
    const broken = `${'A'.repeat(REMEMBERED_TEXT_MAX - 20)}\nbroken-${'z'.repeat(100)}`;
    assert.deepEqual(readRememberedNames(broken), []);
    const many = Array.from({ length: 1000 }, (_, i) => `m${i}`).join('\n');
    assert.deepEqual(
      readRememberedNames(many),
      Array.from({ length: 8 }, (_, i) => `m${i}`),
    );
  });

  test('a name goes from a namespace unless a Pod there that has not ended still names it', () => {
    const plan = planNamespaceSweep({
      names: ['old', 'older', 'oldest'],
      pods: [
        pod('runs', ['old']),
        pod('also', ['other', 'old'], 'Pending'),
        pod('done', ['older'], 'Succeeded'),
        pod('failed', ['older'], 'Failed'),
        pod('none', []),
      ],
    });
    assert.deepEqual(plan.remove, ['older', 'oldest']);
    assert.deepEqual(plan.kept, [{ name: 'old', pods: 2 }]);
    assert.deepEqual(planNamespaceSweep({ names: ['old'], pods: [] }), { remove: ['old'], kept: [] });
  });

  test('a name stays remembered while a namespace kept it or failed on it, and is forgotten otherwise', () => {
    const answers = new Map<string, NameAnswer[]>([
      ['gone', ['removed', 'absent', 'not-ours']],
      ['used', ['removed', 'kept']],
      ['unsure', ['absent', 'failed']],
      ['nowhere', []],
    ]);
    assert.deepEqual([...namesStillPending(answers)].sort(), ['unsure', 'used']);
  });
});

interface FakeSecret {
  readonly namespace: string;
  readonly name: string;
  readonly ours: boolean;
}

/** Calls backed by an in-memory cluster: deletes refused for a Secret not ours, as the policy does. */
function fakeCalls(
  namespaces: string[],
  secrets: FakeSecret[],
  pods: Map<string, V1Pod[]>,
): { -readonly [K in keyof RenamedCopyCalls]-?: NonNullable<RenamedCopyCalls[K]> } & {
  deleted: string[];
  listed: string[];
  record: string | undefined;
  failPods: Set<string>;
} {
  const calls = {
    deleted: [] as string[],
    listed: [] as string[],
    record: undefined as string | undefined,
    failPods: new Set<string>(),
    listNamespaces: () => Promise.resolve([...namespaces]),
    listLivePods: (namespace: string) => {
      calls.listed.push(namespace);
      if (calls.failPods.has(namespace)) return Promise.reject(new KubeApiError('boom', { statusCode: 500 }));
      return Promise.resolve(pods.get(namespace) ?? []);
    },
    deleteSecret: (namespace: string, name: string) => {
      const i = secrets.findIndex((s) => s.namespace === namespace && s.name === name);
      if (i < 0) return Promise.reject(new KubeApiError('not found', { statusCode: 404 }));
      if (secrets[i]?.ours !== true)
        return Promise.reject(
          new KubeApiError(
            `secrets "${name}" is forbidden: ValidatingAdmissionPolicy 'rt-bootstrapper-webhook-secrets' with binding 'rt-bootstrapper-webhook-secrets' denied request`,
            { statusCode: 403 },
          ),
        );
      secrets.splice(i, 1);
      calls.deleted.push(`${namespace}/${name}`);
      return Promise.resolve({});
    },
    readRecord: () => Promise.resolve(calls.record),
    writeRecord: (text: string) => {
      calls.record = text;
      return Promise.resolve();
    },
  };
  return calls;
}

const ourCopy = (namespace: string, name: string): FakeSecret => ({ namespace, name, ours: true });
const names = (secrets: FakeSecret[]): string[] => secrets.map((s) => `${s.namespace}/${s.name}`);

describe('the renamed-copy sweeper', () => {
  const make = (
    calls: RenamedCopyCalls,
    name: () => string | undefined,
    resweepMs?: number,
  ): RenamedCopySweeper =>
    new RenamedCopySweeper({
      calls,
      currentName: name,
      metrics: createWebhookMetrics(new Registry()),
      logger: silentLogger(),
      resweepMs,
    });

  test('deletes earlier names by name in every namespace: ours go, a tenant’s is left, a used one is kept', async () => {
    const secrets = [
      ourCopy('a', 'old'),
      ourCopy('a', 'new'),
      ourCopy('b', 'old'),
      { namespace: 'c', name: 'old', ours: false },
      ourCopy('c', 'new'),
    ];
    const calls = fakeCalls(['a', 'b', 'c', 'd'], secrets, new Map([['a', [pod('p', ['old'])]]]));
    calls.record = 'old';
    const sweeper = make(calls, () => 'new');
    assert.deepEqual(await sweeper.sweep(), { removed: 1, kept: 1, failed: 0 });
    assert.deepEqual(calls.deleted, ['b/old']);
    assert.deepEqual(names(secrets), ['a/old', 'a/new', 'c/old', 'c/new']);
    assert.deepEqual(calls.record, 'new\nold', 'kept in a: still remembered');
    // The Pod ended: the copy goes, and the name is forgotten (c's Secret is not ours, d has none).
    calls.listed.length = 0;
    const pods = new Map<string, V1Pod[]>();
    const later = fakeCalls(['a', 'b', 'c', 'd'], secrets, pods);
    later.record = calls.record;
    const again = make(later, () => 'new');
    assert.deepEqual(await again.sweep(), { removed: 1, kept: 0, failed: 0 });
    assert.deepEqual(names(secrets), ['a/new', 'c/old', 'c/new']);
    assert.equal(later.record, 'new');
    assert.deepEqual(await again.sweep(), { removed: 0, kept: 0, failed: 0 });
    assert.deepEqual(later.listed, ['a', 'b', 'c', 'd'], 'no earlier name: no Pod read');
  });

  test('never deletes the name in force; nothing before a configuration', async () => {
    const secrets = [ourCopy('a', 'new')];
    const calls = fakeCalls(['a'], secrets, new Map());
    calls.record = 'new\nnew';
    assert.deepEqual(await make(calls, () => 'new').sweep(), { removed: 0, kept: 0, failed: 0 });
    assert.deepEqual(await make(calls, () => undefined).sweep(), { removed: 0, kept: 0, failed: 0 });
    assert.deepEqual(names(secrets), ['a/new']);
    assert.deepEqual(calls.listed, []);
  });

  test('a restart remembers from the record; the name in force is stored for the next one', async () => {
    const secrets = [ourCopy('a', 'first'), ourCopy('a', 'second')];
    const calls = fakeCalls(['a'], secrets, new Map());
    assert.deepEqual(await make(calls, () => 'first').sweep(), { removed: 0, kept: 0, failed: 0 });
    assert.equal(calls.record, 'first');
    // A new process, renamed while it was down: it never saw `first` in force.
    assert.equal((await make(calls, () => 'second').sweep()).removed, 1);
    assert.deepEqual(names(secrets), ['a/second']);
    assert.equal(calls.record, 'second');
  });

  test('a namespace whose Pods cannot be read, or a failing delete, keeps the name remembered', async () => {
    const secrets = [ourCopy('a', 'old'), ourCopy('b', 'old')];
    const calls = fakeCalls(['a', 'b'], secrets, new Map());
    calls.record = 'old';
    calls.failPods.add('a');
    const sweeper = make(calls, () => 'new');
    assert.deepEqual(await sweeper.sweep(), { removed: 1, kept: 0, failed: 1 });
    assert.equal(calls.record, 'new\nold');
    calls.failPods.clear();
    const deny = calls.deleteSecret;
    calls.deleteSecret = () =>
      Promise.reject(new KubeApiError('User cannot delete resource "secrets"', { statusCode: 403 }));
    assert.deepEqual(
      await sweeper.sweep(),
      { removed: 0, kept: 0, failed: 2 },
      'RBAC refused: not "not ours"',
    );
    assert.equal(calls.record, 'new\nold');
    calls.deleteSecret = deny;
    assert.deepEqual(await sweeper.sweep(), { removed: 1, kept: 0, failed: 0 });
    assert.equal(calls.record, 'new');
  });

  test('follow remembers each name and sweeps on a rename, not on a repeat; a kept copy is looked at again', async () => {
    const secrets = [ourCopy('a', 'old'), ourCopy('a', 'new')];
    const pods = new Map([['a', [pod('p', ['old'])]]]);
    const calls = fakeCalls(['a'], secrets, pods);
    let name = 'old';
    const sweeper = make(calls, () => name, 20);
    let lists = 0;
    const counted = calls.listNamespaces.bind(calls);
    calls.listNamespaces = () => {
      lists++;
      return counted();
    };
    sweeper.follow();
    sweeper.follow();
    await waitFor(() => calls.record === 'old');
    name = 'new';
    sweeper.follow();
    await waitFor(() => lists >= 1);
    assert.deepEqual(calls.deleted, [], 'kept: a live Pod names it');
    pods.set('a', []); // the Pod ended
    await waitFor(() => calls.deleted.length === 1);
    assert.deepEqual(calls.deleted, ['a/old']);
    await waitFor(() => calls.record === 'new');
    name = 'newer';
    sweeper.follow();
    await waitFor(() => calls.deleted.length === 2);
    assert.deepEqual(calls.deleted, ['a/old', 'a/new']);
    await waitFor(() => calls.record === 'newer');
    const before = lists;
    sweeper.follow(); // same name: nothing
    await sleep(60);
    assert.equal(lists, before, 'nothing kept, nothing failed: no more sweeps');
    assert.deepEqual(sweeper.remembered(), ['newer']);
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
