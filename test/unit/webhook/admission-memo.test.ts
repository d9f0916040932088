import assert from 'node:assert/strict';
import { request } from 'node:https';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { parseWebhookConfig, type WebhookConfig } from '../../../src/api/webhook-config.js';
import type { Pod } from '../../../src/mutation/pod.js';
import { createCertificateAuthority } from '../../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../../src/pki/issue-certificate.js';
import { LogRateLimit } from '../../../src/telemetry/log-rate-limit.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import {
  handleAdmission,
  replayAdmission,
  type AdmissionContext,
  type AdmissionRecord,
} from '../../../src/webhook/admission-handler.js';
import { decodeAdmissionReview } from '../../../src/webhook/admission-review.js';
import { AdmissionMemo } from '../../../src/webhook/admission-memo.js';
import { createWebhookMetrics } from '../../../src/webhook/webhook-metrics.js';
import { WebhookServer } from '../../../src/webhook/webhook-server.js';
import { seedConfigText, seedPodBefore } from '../../support/fixtures.js';

const GO_PREFIX = '{"kind":"AdmissionReview","apiVersion":"admission.k8s.io/v1","request":{"uid":"';

/** An AdmissionReview as the API server writes it (Go's member order). */
function review(pod: Pod, uid: string, namespace = 'default', operation = 'CREATE', dryRun = false): string {
  const request = {
    kind: { group: '', version: 'v1', kind: 'Pod' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    namespace,
    operation,
    userInfo: { username: 'system:serviceaccount:kube-system:replicaset-controller' },
    object: pod,
    oldObject: operation === 'UPDATE' ? pod : null,
    dryRun,
  };
  return `${GO_PREFIX}${uid}",${JSON.stringify(request).slice(1)}}`;
}

void describe('AdmissionMemo keys', () => {
  const memo = new AdmissionMemo<string>();
  const pod = seedPodBefore();

  test('bodies that differ only in the request uid share a key; the uid is found', () => {
    const a = memo.probe(Buffer.from(review(pod, '11111111-aaaa')));
    const b = memo.probe(Buffer.from(review(pod, '22222222-bbbb')));
    assert.ok(a && b);
    assert.equal(a.key, b.key);
    assert.equal(a.uid, '11111111-aaaa');
    assert.equal(b.uid, '22222222-bbbb');
  });

  test('any other difference gives another key', () => {
    const base = memo.probe(Buffer.from(review(pod, 'u1')))?.key;
    const other = [
      review(pod, 'u1', 'team-a'),
      review(pod, 'u1', 'default', 'UPDATE'),
      review(pod, 'u1', 'default', 'CREATE', true),
      review({ ...pod, metadata: { ...pod.metadata, labels: { app: 'x' } } }, 'u1'),
    ];
    for (const body of other) assert.notEqual(memo.probe(Buffer.from(body))?.key, base, body.slice(0, 200));
  });

  test('bodies that do not start with the envelope, odd uids and large bodies are not keyed', () => {
    const json = JSON.parse(review(pod, 'u1')) as Record<string, unknown>;
    assert.equal(
      memo.probe(Buffer.from(JSON.stringify({ request: json.request, kind: 'AdmissionReview' }))),
      undefined,
    );
    assert.equal(memo.probe(Buffer.from(review(pod, 'has space'))), undefined);
    assert.equal(memo.probe(Buffer.from(review(pod, 'quote\\"d'))), undefined);
    assert.equal(memo.probe(Buffer.from(review(pod, ''))), undefined);
    assert.equal(new AdmissionMemo(8, 100).probe(Buffer.from(review(pod, 'u1'))), undefined);
    // The other common member order is keyed too.
    const reordered = `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","x":1}}`;
    assert.equal(memo.probe(Buffer.from(reordered))?.uid, 'u1');
  });

  test('a request that names its object is not keyed: only generateName Pods come again', () => {
    const named =
      GO_PREFIX +
      'u1",' +
      JSON.stringify({ name: 'web-0', namespace: 'default', object: pod }).slice(1) +
      '}';
    assert.equal(memo.probe(Buffer.from(named)), undefined);
    // A "name" inside the object (the Pod's own metadata, a container's name) does not count.
    assert.ok(memo.probe(Buffer.from(review(pod, 'u1'))));
  });

  test('a record is keyed only when the decoded uid is the masked one and not repeated later', () => {
    const body = Buffer.from(review(pod, 'u1'));
    const probe = memo.probe(body);
    assert.ok(probe);
    assert.equal(AdmissionMemo.keyable(body, probe, 'u1'), true);
    assert.equal(AdmissionMemo.keyable(body, probe, 'u2'), false);
    // A duplicate `uid` member (JSON keeps the last) makes the body unkeyable.
    const dup = Buffer.from(`${GO_PREFIX}u1","x":1,"uid":"u1"}}`);
    const dupProbe = memo.probe(dup);
    assert.ok(dupProbe);
    assert.equal(AdmissionMemo.keyable(dup, dupProbe, 'u1'), false);
  });

  test('least recently used records go first', () => {
    const small = new AdmissionMemo<number>(2);
    small.set('a', 1);
    small.set('b', 2);
    assert.equal(small.get('a'), 1); // a is now the most recent
    small.set('c', 3);
    assert.equal(small.get('b'), undefined);
    assert.equal(small.get('a'), 1);
    assert.equal(small.get('c'), 3);
    assert.equal(small.size, 2);
    small.delete('a');
    assert.equal(small.get('a'), undefined);
  });
});

/** The world the handler reads, changed between requests by the property test. */
interface World {
  config: WebhookConfig;
  annotations: Map<string, Record<string, string>>;
  secretAvailable: boolean;
  ensured: number;
  /** Whether the context answers at once (as the app's caches do) or with promises (I/O). */
  sync: boolean;
}

const seedConfig = parseWebhookConfig(JSON.parse(seedConfigText()));
const configs: WebhookConfig[] = [
  seedConfig,
  parseWebhookConfig({
    ...JSON.parse(seedConfigText()),
    overrides: { 'replace.me': 'mirror.example.com/x' },
  }),
  parseWebhookConfig({
    ...JSON.parse(seedConfigText()),
    availableFeatures: ['rt-cfg.kyma-project.io/set-fips-mode'],
  }),
];
const namespaceAnnotationSets: Record<string, string>[] = [
  {},
  { 'rt-cfg.kyma-project.io/add-img-pull-secret': 'true' },
  { 'rt-cfg.kyma-project.io/all': 'true' },
];

function contextOf(world: World): AdmissionContext {
  return {
    config: () => world.config,
    // A fresh object on every call: the memo must compare annotations by value.
    namespaceAnnotations: (name) => {
      const annotations = { ...(world.annotations.get(name) ?? {}) };
      return world.sync ? annotations : Promise.resolve(annotations);
    },
    pullSecret: {
      ensure: () => {
        world.ensured++;
        return world.sync ? world.secretAvailable : Promise.resolve(world.secretAvailable);
      },
    },
    metrics: createWebhookMetrics(new Registry()),
    logger: silentLogger(),
    logLimit: new LogRateLimit(silentLogger()),
    failOpen: true,
  };
}

function newWorld(): World {
  return { config: seedConfig, annotations: new Map(), secretAvailable: true, ensured: 0, sync: false };
}

void describe('replayAdmission', () => {
  async function recordFor(world: World): Promise<AdmissionRecord> {
    const body = review(seedPodBefore(), 'first');
    const handled = await handleAdmission(decodeAdmissionReview(Buffer.from(body)), contextOf(world));
    assert.ok(handled.record);
    return handled.record;
  }

  test('answers at once, without a promise, when the context answers from its caches', async () => {
    const world = { ...newWorld(), sync: true };
    const record = await recordFor(world);
    const replayed = replayAdmission(record, 'second', contextOf(world));
    assert.ok(replayed !== undefined && !(replayed instanceof Promise));
    assert.equal(replayed.body.toString(), record.respond('second').toString());
    const later = await replayAdmission(record, 'third', contextOf({ ...world, sync: false }));
    assert.equal(later?.body.toString(), record.respond('third').toString());
  });

  test('a read that fails, at once or later, sends the request to a fresh decision', async () => {
    const world = newWorld();
    const record = await recordFor(world);
    const failing = (how: 'throw' | 'reject', what: 'namespace' | 'secret'): AdmissionContext => {
      const ctx = contextOf({ ...world, sync: true });
      const fail = (): never => {
        throw new Error('cache gone');
      };
      const failed = how === 'throw' ? fail : () => Promise.reject(new Error('API down'));
      return what === 'namespace'
        ? { ...ctx, namespaceAnnotations: failed }
        : { ...ctx, pullSecret: { ensure: failed } };
    };
    for (const how of ['throw', 'reject'] as const)
      for (const what of ['namespace', 'secret'] as const)
        assert.equal(await replayAdmission(record, 'u', failing(how, what)), undefined, `${what} ${how}`);
  });
});

void describe('the webhook server with and without the memo', () => {
  let caPem = '';
  let tls: { cert: string; key: string };
  const servers: WebhookServer[] = [];

  before(async () => {
    const ca = await createCertificateAuthority({ commonName: 'memo-test' });
    caPem = ca.certPem;
    const serving = await issueCertificate(ca, {
      commonName: '127.0.0.1',
      ipAddresses: ['127.0.0.1'],
      usage: 'server',
    });
    tls = { cert: serving.certPem, key: serving.keyPem };
  });
  after(async () => {
    for (const s of servers) await s.close({ timeoutMs: 100 });
  });

  async function serve(
    world: World,
    memoEntries: number,
  ): Promise<{ url: string; server: WebhookServer; registry: Registry }> {
    const registry = new Registry();
    const context = { ...contextOf(world), metrics: createWebhookMetrics(registry) };
    const server = new WebhookServer({
      tls,
      host: '127.0.0.1',
      port: 0,
      context,
      registry,
      ready: () => true,
      logger: silentLogger(),
      memoEntries,
    });
    servers.push(server);
    const port = await server.listen();
    return { url: `https://127.0.0.1:${port}/mutate`, server, registry };
  }

  function post(url: string, body: string): Promise<string> {
    return new Promise((resolve, reject) => {
      const req = request(url, { method: 'POST', ca: caPem }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => {
          resolve(`${res.statusCode ?? 0} ${text}`);
        });
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  test('an identical request is answered from the memo with its own uid, the pull Secret still ensured', async () => {
    const world = newWorld();
    const { url, registry } = await serve(world, 16);
    // The first is decided, the second decided and kept (a body is kept from its second time
    // on), the third answered from the memo.
    const answers = [];
    for (const uid of ['aaaa-1', 'bbbb-2', 'cccc-3'])
      answers.push(await post(url, review(seedPodBefore(), uid)));
    const [first, second, third] = answers;
    assert.match(first ?? '', /^200 /);
    assert.equal(second, first?.replace('aaaa-1', 'bbbb-2'));
    assert.equal(third, first?.replace('aaaa-1', 'cccc-3'));
    assert.equal(world.ensured, 3);
    const reuse = (await registry.getSingleMetric('rtb_webhook_answer_reuse_total')?.get())?.values ?? [];
    assert.deepEqual(
      reuse.map((v) => [v.labels.outcome, v.value]),
      [['hit', 1]],
    );
    const mutated = (await registry.getSingleMetric('rtb_webhook_mutations_total')?.get())?.values ?? [];
    assert.ok(mutated.length > 0 && mutated.every((v) => v.value === 3), 'mutations counted on every answer');
  });

  test('a body seen once is not kept; the keys of one-off bodies are bounded', () => {
    const memo = new AdmissionMemo<number>(2, 1024, 3);
    assert.equal(memo.seenBefore('a'), false);
    assert.equal(memo.seenBefore('a'), true);
    assert.equal(memo.seenBefore('b'), false);
    assert.equal(memo.seenBefore('c'), false);
    // Full: the remembered keys are dropped at once.
    assert.equal(memo.seenBefore('d'), false);
    assert.equal(memo.seenBefore('a'), false);
    assert.equal(memo.seenBefore('d'), true);
  });

  test('property: with the memo, every answer is the one a fresh decision gives, whatever changes between requests', async () => {
    const pods: Pod[] = [
      seedPodBefore(),
      { ...seedPodBefore(), metadata: { ...seedPodBefore().metadata, annotations: {} } },
      {
        ...seedPodBefore(),
        metadata: {
          ...seedPodBefore().metadata,
          annotations: { 'rt-cfg.kyma-project.io/add-img-pull-secret': 'false' },
        },
      },
    ];
    const namespaces = ['default', 'kyma-system', 'team-a'];
    // Few request shapes, so the same one comes again after the world changed (what the memo
    // must notice); every pod, namespace, operation and dry-run value appears in one.
    const shapes = [
      { pod: 0, namespace: 'default', operation: 'CREATE', dryRun: false },
      { pod: 1, namespace: 'team-a', operation: 'CREATE', dryRun: false },
      { pod: 1, namespace: 'kyma-system', operation: 'CREATE', dryRun: true },
      { pod: 2, namespace: 'default', operation: 'CREATE', dryRun: false },
      { pod: 0, namespace: 'team-a', operation: 'UPDATE', dryRun: false },
    ] as const;
    const req = (shape: number, uid: string) => ({ kind: 'request' as const, shape, uid });
    const action = fc.oneof(
      {
        weight: 6,
        arbitrary: fc.record({
          kind: fc.constant('request' as const),
          shape: fc.nat(shapes.length - 1),
          uid: fc.uuid(),
        }),
      },
      {
        weight: 1,
        arbitrary: fc.record({ kind: fc.constant('config' as const), index: fc.nat(configs.length - 1) }),
      },
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant('namespace' as const),
          namespace: fc.constantFrom(...namespaces),
          index: fc.nat(namespaceAnnotationSets.length - 1),
        }),
      },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('secret' as const), available: fc.boolean() }) },
    );
    type Action = typeof action extends fc.Arbitrary<infer A> ? A : never;
    await fc.assert(
      fc.asyncProperty(
        fc.array(action, { minLength: 1, maxLength: 40 }),
        fc.boolean(),
        async (actions, sync) => {
          const withMemo = { ...newWorld(), sync };
          const without = newWorld();
          const a = await serve(withMemo, 16);
          const b = await serve(without, 0);
          try {
            for (const act of actions) {
              for (const w of [withMemo, without]) {
                if (act.kind === 'config') w.config = configs[act.index] ?? seedConfig;
                if (act.kind === 'namespace')
                  w.annotations.set(act.namespace, namespaceAnnotationSets[act.index] ?? {});
                if (act.kind === 'secret') w.secretAvailable = act.available;
              }
              if (act.kind !== 'request') continue;
              const shape = shapes[act.shape] ?? shapes[0];
              const body = review(
                pods[shape.pod] ?? seedPodBefore(),
                act.uid,
                shape.namespace,
                shape.operation,
                shape.dryRun,
              );
              const ensuredBefore = [withMemo.ensured, without.ensured] as const;
              assert.equal(await post(a.url, body), await post(b.url, body));
              // Never skipped: a Pod that needs the Secret gets it ensured (twice when the memo's
              // record turned out stale because the Secret's state changed; ensure is idempotent).
              assert.equal(
                withMemo.ensured > ensuredBefore[0],
                without.ensured > ensuredBefore[1],
                'the pull Secret is ensured whenever a fresh decision ensures it',
              );
            }
          } finally {
            await a.server.close({ timeoutMs: 100 });
            await b.server.close({ timeoutMs: 100 });
          }
        },
      ),
      {
        numRuns: 100,
        // Each thing a record depends on, changed after a body was kept (from its second time on).
        examples: [true, false].flatMap((sync): [Action[], boolean][] => [
          [
            [req(1, 'u1'), req(1, 'u2'), { kind: 'namespace', namespace: 'team-a', index: 1 }, req(1, 'u3')],
            sync,
          ],
          [
            [req(3, 'u1'), req(3, 'u2'), { kind: 'namespace', namespace: 'default', index: 2 }, req(3, 'u3')],
            sync,
          ],
          [[req(0, 'u1'), req(0, 'u2'), { kind: 'config', index: 1 }, req(0, 'u3')], sync],
          [[req(0, 'u1'), req(0, 'u2'), { kind: 'secret', available: false }, req(0, 'u3')], sync],
        ]),
      },
    );
  });
});
