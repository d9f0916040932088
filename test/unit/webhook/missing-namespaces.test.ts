import type { V1Namespace, V1Secret } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { KubeApiError } from '../../../src/kube/kube-errors.js';
import type { Reflector } from '../../../src/kube/reflector.js';
import { Store } from '../../../src/kube/store.js';
import { LogRateLimit } from '../../../src/telemetry/log-rate-limit.js';
import { isNamespaceName, MissingNamespaces } from '../../../src/webhook/missing-namespaces.js';
import { namespaceAnnotationLookup } from '../../../src/webhook/namespace-lookup.js';
import { PullSecretCopier, type SecretWrites } from '../../../src/webhook/pull-secret-copier.js';
import { createWebhookMetrics } from '../../../src/webhook/webhook-metrics.js';
import { captureLogs } from '../../support/log-capture.js';

/** A clock the test moves. */
function fakeClock(): { now: () => number; advance: (ms: number) => void } {
  let t = 1_000;
  return {
    now: () => t,
    advance: (ms) => {
      t += ms;
    },
  };
}

const notFound = (): KubeApiError => new KubeApiError('namespaces "ghost" not found', { statusCode: 404 });

/** A reflector as far as the lookup and copier read it: its store (filled by the test). */
function fakeReflector<T extends { metadata?: { name?: string; namespace?: string } }>(
  items: T[] = [],
): Reflector<T> {
  const store = new Store<T>();
  for (const item of items) store.upsert(item);
  return { store, addEventHandler: () => undefined } as unknown as Reflector<T>;
}

describe('MissingNamespaces', () => {
  test('remembers a miss until its TTL has passed', () => {
    const clock = fakeClock();
    const missing = new MissingNamespaces({ ttlMs: 5_000, now: clock.now });
    assert.equal(missing.has('ghost'), false);
    missing.remember('ghost');
    assert.equal(missing.has('ghost'), true);
    clock.advance(4_999);
    assert.equal(missing.has('ghost'), true);
    clock.advance(1);
    assert.equal(missing.has('ghost'), false);
    assert.equal(missing.size, 0, 'an expired miss is dropped when looked up');
  });

  test('is bounded: the oldest misses go first', () => {
    const clock = fakeClock();
    const missing = new MissingNamespaces({ maxEntries: 3, now: clock.now });
    for (const name of ['a', 'b', 'c', 'd']) missing.remember(name);
    assert.equal(missing.size, 3);
    assert.equal(missing.has('a'), false);
    assert.equal(missing.has('d'), true);
    missing.remember('b'); // refreshed: now the newest
    missing.remember('e');
    assert.equal(missing.has('c'), false);
    assert.equal(missing.has('b'), true);
  });

  test('a name that cannot be a namespace is missing without being stored', () => {
    const missing = new MissingNamespaces();
    const long = 'n'.repeat(3 * 1024 * 1024);
    missing.remember(long);
    assert.equal(missing.size, 0);
    assert.equal(missing.has(long), true);
    assert.equal(missing.has('Upper'), true);
    assert.equal(missing.has('a/b'), true);
    assert.equal(isNamespaceName('team-a'), true);
    assert.equal(isNamespaceName('x'.repeat(63)), true);
    assert.equal(isNamespaceName('x'.repeat(64)), false);
    assert.equal(isNamespaceName('-a'), false);
  });
});

describe('namespace lookup with the negative cache', () => {
  function setup(namespaces: V1Namespace[] = []): {
    lookup: ReturnType<typeof namespaceAnnotationLookup>;
    reads: string[];
    clock: ReturnType<typeof fakeClock>;
    answer: { current: 'missing' | 'found' | 'fail' | 'watched-meanwhile' };
  } {
    const reads: string[] = [];
    const answer = { current: 'missing' as 'missing' | 'found' | 'fail' | 'watched-meanwhile' };
    const clock = fakeClock();
    const { logger } = captureLogs();
    const store = new Store<V1Namespace>();
    for (const ns of namespaces) store.upsert(ns);
    const lookup = namespaceAnnotationLookup(
      { store },
      {
        readNamespace: async ({ name }) => {
          reads.push(name);
          await Promise.resolve();
          if (answer.current === 'missing') throw notFound();
          if (answer.current === 'fail') throw new KubeApiError('boom', { statusCode: 500 });
          if (answer.current === 'watched-meanwhile') {
            // The watch delivers the namespace while the read waits, then the read times out.
            store.upsert({ metadata: { name, annotations: { from: 'watch' } } });
            throw new KubeApiError(`GET /api/v1/namespaces/${name} timed out`);
          }
          return { metadata: { name, annotations: { a: 'b' } } };
        },
      },
      new MissingNamespaces({ ttlMs: 5_000, now: clock.now }),
      logger,
      new LogRateLimit(logger),
    );
    return { lookup, reads, clock, answer };
  }

  test('a namespace that does not exist costs one GET, not one per request, until the TTL passes', async () => {
    const s = setup();
    assert.equal(await s.lookup('ghost'), undefined);
    for (let i = 0; i < 100; i++) assert.equal(await s.lookup('ghost'), undefined, 'answered from memory');
    assert.deepEqual(s.reads, ['ghost']);
    s.clock.advance(5_000);
    s.answer.current = 'found';
    assert.deepEqual(await s.lookup('ghost'), { a: 'b' });
    assert.deepEqual(s.reads, ['ghost', 'ghost']);
  });

  test('concurrent lookups of one name share one GET', async () => {
    const s = setup();
    const all = await Promise.all(Array.from({ length: 50 }, () => s.lookup('ghost')));
    assert.ok(all.every((a) => a === undefined));
    assert.deepEqual(s.reads, ['ghost']);
  });

  test('other failures are not remembered (the next request asks again)', async () => {
    const s = setup();
    s.answer.current = 'fail';
    assert.equal(await s.lookup('flaky'), undefined);
    assert.equal(await s.lookup('flaky'), undefined);
    assert.deepEqual(s.reads, ['flaky', 'flaky']);
  });

  test('a read that fails answers from the cache when the watch delivered the namespace meanwhile', async () => {
    const s = setup();
    s.answer.current = 'watched-meanwhile';
    assert.deepEqual(await s.lookup('fresh'), { from: 'watch' });
    assert.deepEqual(await s.lookup('fresh'), { from: 'watch' }, 'now from the cache');
    assert.deepEqual(s.reads, ['fresh']);
  });

  test('names that cannot be namespaces cost no GET at all; cached namespaces never ask', async () => {
    const s = setup([{ metadata: { name: 'team', annotations: { x: 'y' } } }]);
    assert.equal(await s.lookup('n'.repeat(100_000)), undefined);
    assert.deepEqual(await s.lookup('team'), { x: 'y' });
    assert.deepEqual(s.reads, []);
  });
});

describe('pull-Secret copies for namespaces that do not exist', () => {
  const source: V1Secret = {
    metadata: { name: 'registry-credentials', namespace: 'kyma-system' },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': 'e30=' },
  };

  function setup(): {
    copier: PullSecretCopier;
    posts: string[];
    missing: MissingNamespaces;
    lines: () => Record<string, unknown>[];
  } {
    const posts: string[] = [];
    const core: SecretWrites = {
      createNamespacedSecret: async ({ namespace }) => {
        posts.push(namespace);
        await Promise.resolve();
        throw new KubeApiError(`namespaces "${namespace}" not found`, { statusCode: 404 });
      },
      replaceNamespacedSecret: () => Promise.reject(new Error('unexpected')),
      deleteNamespacedSecret: () => Promise.reject(new Error('unexpected')),
    };
    const { logger, lines } = captureLogs();
    const missing = new MissingNamespaces();
    const copier = new PullSecretCopier({
      core,
      secrets: fakeReflector([source]),
      namespaces: fakeReflector<V1Namespace>([]),
      source: { name: 'registry-credentials', namespace: 'kyma-system' },
      metrics: createWebhookMetrics(new Registry()),
      logger,
      missingNamespaces: missing,
      logLimit: new LogRateLimit(logger),
    });
    return { copier, posts, missing, lines };
  }

  test('a 404 is remembered: the next requests write nothing and log no stack', async () => {
    const s = setup();
    assert.equal(await s.copier.ensure('ghost', { dryRun: false }), false);
    for (let i = 0; i < 100; i++) assert.equal(await s.copier.ensure('ghost', { dryRun: false }), false);
    assert.deepEqual(s.posts, ['ghost']);
    const logged = s.lines();
    assert.equal(logged.length, 1);
    assert.equal(logged[0]!.err, undefined, 'no error object (and stack) for a missing namespace');
    assert.equal(logged[0]!.namespace, 'ghost');
  });

  test('a namespace the lookup already found missing costs no POST at all', async () => {
    const s = setup();
    s.missing.remember('ghost');
    assert.equal(await s.copier.ensure('ghost', { dryRun: false }), false);
    assert.equal(await s.copier.ensure('n'.repeat(1_000), { dryRun: false }), false);
    assert.deepEqual(s.posts, []);
  });
});
