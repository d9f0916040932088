// The webhook's hardening against a real kube-apiserver: one pull-Secret copier whatever the
// timing of config changes, no API call per request for a namespace that does not exist, and
// refused configurations counted once per content.
import { CoreV1Api } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import type { ClientRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../src/api/managed-labels.js';
import { useControlPlane } from '../support/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { seedConfigText } from '../support/fixtures.js';
import { httpsCall } from '../support/https-call.js';
import { podReview } from '../support/admission-review.js';
import { captureLogs } from '../support/log-capture.js';
import { startTestWebhook, type TestWebhook } from '../support/webhook.js';

const plane = useControlPlane({ clusters: ['runtime'] });
const CONFIG = { name: 'rt-bootstrapper-config', namespace: 'kyma-system' };
const KEY = 'rt-bootstrapper-config.json';
const ALL = 'rt-cfg.kyma-project.io/all';
let webhook: TestWebhook;
let core: CoreV1Api;
const logs = captureLogs('info');

/** The seed config naming another pull Secret. */
function configNaming(secret: string): string {
  const config = JSON.parse(seedConfigText()) as Record<string, unknown>;
  return JSON.stringify({ ...config, imagePullSecret: { name: secret, namespace: 'kyma-system' } });
}

async function writeConfig(text: string, labels: Record<string, string> = {}): Promise<void> {
  await core.replaceNamespacedConfigMap({
    ...CONFIG,
    body: { metadata: { ...CONFIG, labels }, data: { [KEY]: text } },
  });
}

/** The names of our Secret copies in `namespace`. */
async function copiesIn(namespace: string): Promise<string[]> {
  const list = await core.listNamespacedSecret({
    namespace,
    labelSelector: `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`,
  });
  return list.items.map((s) => s.metadata?.name ?? '').sort();
}

async function failures(): Promise<number> {
  const metric = await webhook.app.registry.getSingleMetric('rtb_webhook_config_reloads_total')?.get();
  return metric?.values.find((v) => v.labels.result === 'failure')?.value ?? 0;
}

describe('webhook hardening through a real kube-apiserver', () => {
  before(async () => {
    core = plane().cluster('runtime').kubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'kyma-system' } } });
    for (const name of ['registry-credentials', 'pull-b', 'pull-c'])
      await core.createNamespacedSecret({
        namespace: 'kyma-system',
        body: { metadata: { name }, type: 'Opaque', data: { token: Buffer.from(name).toString('base64') } },
      });
    await core.createNamespacedConfigMap({
      namespace: CONFIG.namespace,
      body: { metadata: { name: CONFIG.name }, data: { [KEY]: seedConfigText() } },
    });
    webhook = await startTestWebhook(plane().cluster('runtime'), {
      logger: logs.logger,
      metricsPort: 0,
      // A miss believed for the whole file: "one GET in all" must not depend on how fast this
      // machine sends 50 requests (the TTL itself is tested with a fake clock in unit tests).
      missingNamespaces: { ttlMs: 10 * 60_000 },
    });
  });

  after(async () => {
    await webhook.stop();
  });

  test('with a metrics port, /metrics is served there over HTTP and no longer on the webhook port', async () => {
    const port = webhook.app.metricsPort;
    assert.ok(port !== undefined && port > 0);
    const res = await fetch(`http://127.0.0.1:${String(port)}/metrics`);
    assert.equal(res.status, 200);
    assert.match(await res.text(), /rtb_webhook_config_reloads_total/);
    const onWebhookPort = await httpsCall({
      port: webhook.app.port,
      caPem: webhook.ca.certPem,
      path: '/metrics',
      method: 'GET',
    });
    assert.equal(onWebhookPort.status, 404);
  });

  test('two quick changes of the pull Secret name: new namespaces get one copy, of the latest name', async () => {
    // Two changes in one turn of the event loop (as the ConfigMap source offers them), so the
    // second surely arrives while the first copier is still being stopped.
    webhook.app.config.offer(configNaming('pull-b'), 'test');
    webhook.app.config.offer(configNaming('pull-c'), 'test');
    // The ConfigMap agrees with what is in force (the same text is no change).
    await writeConfig(configNaming('pull-c'));
    await eventually(
      () =>
        webhook.app.config.get()?.imagePullSecret.name === 'pull-c' && webhook.app.ready() ? true : undefined,
      15_000,
      'the latest name in force',
    );
    await core.createNamespace({ body: { metadata: { name: 'after-switch' } } });
    await eventually(
      async () => ((await copiesIn('after-switch')).includes('pull-c') ? true : undefined),
      15_000,
      'the copy of the latest Secret',
    );
    // A second namespace, created later, as a barrier: a stale copier would have served the
    // first namespace by the time the current one has served this one.
    await core.createNamespace({ body: { metadata: { name: 'after-switch-2' } } });
    await eventually(
      async () => ((await copiesIn('after-switch-2')).includes('pull-c') ? true : undefined),
      15_000,
      'the copy in the second namespace',
    );
    assert.deepEqual(await copiesIn('after-switch'), ['pull-c']);
    assert.deepEqual(await copiesIn('after-switch-2'), ['pull-c']);
    // Back to the seed's name for the other tests.
    await writeConfig(seedConfigText());
    await eventually(
      () =>
        webhook.app.config.get()?.imagePullSecret.name === 'registry-credentials' && webhook.app.ready()
          ? true
          : undefined,
      15_000,
      'the seed config back',
    );
  });

  test('requests for a namespace that does not exist cost one GET in all, no Secret POST, no stack', async () => {
    const calls: string[] = [];
    const onRequest = (message: unknown): void => {
      const { request } = message as { request: ClientRequest };
      if (request.path.startsWith('/api/v1/namespaces/ghost-ns'))
        calls.push(`${request.method} ${request.path}`);
    };
    subscribe('http.client.request.start', onRequest);
    try {
      const review = (uid: string): string =>
        podReview(
          {
            metadata: { name: 'p', annotations: { [ALL]: 'true' } },
            spec: { containers: [{ name: 'a', image: 'replace.me/a:1' }] },
          },
          { uid, namespace: 'ghost-ns' },
        );
      const send = (uid: string) =>
        httpsCall({ port: webhook.app.port, caPem: webhook.ca.certPem, path: '/mutate', body: review(uid) });
      // Concurrent first, then one after another.
      const replies = await Promise.all(Array.from({ length: 20 }, (_, i) => send(`c${i}`)));
      for (let i = 0; i < 30; i++) replies.push(await send(`s${i}`));
      assert.ok(replies.every((r) => r.status === 200));
      const answer = JSON.parse(replies.at(-1)!.body) as { response: { allowed: boolean; patch?: string } };
      assert.equal(answer.response.allowed, true);
      const patch = JSON.parse(Buffer.from(answer.response.patch ?? '', 'base64').toString()) as {
        path: string;
      }[];
      assert.ok(
        !patch.some((op) => op.path.includes('imagePullSecrets')),
        'no reference to a Secret not there',
      );
    } finally {
      unsubscribe('http.client.request.start', onRequest);
    }
    assert.deepEqual(calls, ['GET /api/v1/namespaces/ghost-ns']);
    const errors = logs.lines().filter((l) => l.namespace === 'ghost-ns' && l.level === 'error');
    assert.deepEqual(errors, []);
  });

  test('a refused config is counted once, however often it is delivered again', async () => {
    const before = await failures();
    const bad = '{"availableFeatures":["rt-cfg.kyma-project.io/nope"]}';
    await writeConfig(bad);
    await eventually(async () => ((await failures()) > before ? true : undefined), 15_000, 'the refusal');
    // The same text again, with the ConfigMap changed otherwise: each change is delivered.
    for (let i = 0; i < 3; i++) await writeConfig(bad, { touched: String(i) });
    // A different bad text as a barrier: once it is counted, the deliveries above were handled.
    await writeConfig('{"overrides": 3}', { touched: 'barrier' });
    await eventually(
      async () => ((await failures()) >= before + 2 ? true : undefined),
      15_000,
      'the barrier',
    );
    assert.equal(await failures(), before + 2);
    const refusals = logs
      .lines()
      .filter((l) => l.msg === 'configuration refused; the last good configuration stays in force');
    assert.equal(refusals.length, 2);
    assert.equal(
      webhook.app.config.get()?.imagePullSecret.name,
      'registry-credentials',
      'the last good stays',
    );
    await writeConfig(seedConfigText());
  });
});
