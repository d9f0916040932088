/**
 * A namespace user's Pod under our revision whose image fails to pull, with kubelet messages of
 * 20 KB shaped against the redaction's old patterns (`'auth-'` repeated took it 11 s at 5 KB), on a
 * real API server: the workload follower records the failures, redacted and cut, while the
 * webhook in the same process (and so on the same event loop, as in `rtb webhook`) keeps
 * answering the API server's admission calls within their timeout.
 */
import { CoreV1Api, type KubeConfig, type V1Pod } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Registry } from 'prom-client';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import { ADMISSION_TIMEOUT_SECONDS } from '../../src/api/serving-limits.js';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../../src/api/webhook-status.js';
import {
  ORIGINAL_IMAGES_ANNOTATION,
  REVISION_ANNOTATION,
  REVISION_LABEL,
  WORKLOADS_KEY,
  readWorkloads,
  type RevisionHealth,
} from '../../src/api/workload-health.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { MAX_MESSAGE_LENGTH } from '../../src/runtime-agent/workload-health/redact-message.js';
import {
  startWorkloadFollower,
  type WorkloadFollower,
} from '../../src/runtime-agent/workload-health/workload-follower.js';
import { useControlPlane } from '../support/control-plane.js';
import { registerFailingOpen, startTestWebhook, type TestWebhook } from '../support/webhook.js';
import { applyWebhookRights, putSeedConfig, writeContainerStatus } from '../support/webhook-runtime.js';

const plane = useControlPlane({ clusters: ['runtime'] });
const TENANT = 'tenant';
const REVISION = 'v1';
const MIRROR = { 'docker.io': 'mirror.example.com' };
/** Each Pod its own image: the report keeps one sample per image and reason. */
const imageOf = (pod: string): string => `mirror.example.com/library/${pod}:1`;
const FIPS = 'rt-cfg.kyma-project.io/set-fips-mode';
const DEFAULTED = 'rt-bootstrapper.kyma-project.io/defaulted';
/** Each a 20 KB message after a credential the redaction must mask. */
const HOSTILE: Readonly<Record<string, string>> = {
  'auth-dashes': 'auth-',
  'scheme-runs': 'a://',
  'key-runs': '-token ',
};
const message = (unit: string): string =>
  `Get "https://bob:s3cr3t@mirror.example.com/v2/": ${unit.repeat(Math.ceil(20_000 / unit.length))}`;

let cluster: LocalCluster;
let core: CoreV1Api;
let sa: KubeConfig;
let webhook: TestWebhook;
let follower: WorkloadFollower | undefined;

const probe = (name: string): V1Pod => ({
  metadata: { name, annotations: { [FIPS]: 'true' } },
  spec: { containers: [{ name: 'app', image: 'replace.me/app:1' }] },
});

async function report(): Promise<RevisionHealth | undefined> {
  const cm = await core
    .readNamespacedConfigMap({ namespace: RUNTIME_NAMESPACE, name: WEBHOOK_STATUS_CONFIG_MAP })
    .catch(() => undefined);
  return readWorkloads(cm?.data?.[WORKLOADS_KEY])?.[REVISION];
}

describe("a tenant's hostile kubelet messages", () => {
  before(async () => {
    cluster = plane().cluster('runtime');
    core = cluster.kubeConfig().makeApiClient(CoreV1Api);
    sa = await applyWebhookRights(cluster);
    await putSeedConfig(cluster);
    await core.createNamespace({ body: { metadata: { name: TENANT } } });
    // The tenant's Pods, as the admission stamps them under the revision (created before the
    // registration: only the follower reads them here).
    for (const name of Object.keys(HOSTILE))
      await core.createNamespacedPod({
        namespace: TENANT,
        body: {
          metadata: {
            name,
            labels: { [REVISION_LABEL]: REVISION },
            annotations: {
              [REVISION_ANNOTATION]: REVISION,
              [ORIGINAL_IMAGES_ANNOTATION]: JSON.stringify({ app: `docker.io/${name}:1` }),
            },
          },
          // With the pull Secret reference admission adds: a pull failure counts only with it.
          spec: {
            containers: [{ name: 'app', image: imageOf(name) }],
            imagePullSecrets: [{ name: 'registry-credentials' }],
          },
        },
      });
    webhook = await startTestWebhook(cluster);
    await registerFailingOpen(cluster, webhook, probe('probe'));
  });

  after(async () => {
    await follower?.stop();
    await webhook.stop();
  });

  test('are followed, redacted and cut, while every admission in the same process answers in time', async () => {
    follower = startWorkloadFollower({
      access: sa,
      isActive: () => true,
      settings: () => ({ pullSecretName: 'registry-credentials' }),
      inForce: () => ({ revision: REVISION, overrides: MIRROR }),
      namespace: RUNTIME_NAMESPACE,
      registry: new Registry(),
      logger: silentLogger(),
      pollMs: 100,
      writeGapMs: 200,
      retryBaseMs: 200,
    });
    const loop = monitorEventLoopDelay({ resolution: 10 });
    loop.enable();
    for (const [name, unit] of Object.entries(HOSTILE))
      await writeContainerStatus(cluster, TENANT, name, {
        name: 'app',
        image: imageOf(name),
        state: { waiting: { reason: 'ErrImagePull', message: message(unit) } },
      });

    // Pods created through the webhook while the follower reads those messages, until it reported
    // them all: the registration fails open, so an answer later than its timeout stores one unmutated.
    const unmutated: string[] = [];
    let created = 0;
    let health: RevisionHealth | undefined;
    const deadline = Date.now() + 60_000;
    while (created < 10 || (health?.failedPods ?? 0) < Object.keys(HOSTILE).length) {
      assert.ok(Date.now() < deadline, `the follower reported ${JSON.stringify(health)} after 60 s`);
      const name = `admitted-${String(created++)}`;
      const stored = await core.createNamespacedPod({ namespace: 'default', body: probe(name) });
      if (stored.metadata?.annotations?.[DEFAULTED] !== 'true') unmutated.push(name);
      health = await report();
    }
    loop.disable();

    assert.deepEqual(unmutated, [], 'Pods the webhook did not answer in time for');
    // The loop that serves admission never stood still for half the API server's timeout.
    const longestMs = loop.max / 1e6;
    assert.ok(
      longestMs < (ADMISSION_TIMEOUT_SECONDS * 1000) / 2,
      `the event loop stood ${String(longestMs)} ms`,
    );

    assert.equal(health?.failedPods, Object.keys(HOSTILE).length);
    const samples = health.samples.filter((s) => s.pod.startsWith(`${TENANT}/`));
    assert.deepEqual(
      samples.map((s) => s.pod).sort(),
      Object.keys(HOSTILE)
        .map((n) => `${TENANT}/${n}`)
        .sort(),
    );
    for (const s of samples) {
      assert.equal(s.reason, 'ErrImagePull');
      assert.ok(s.message !== undefined && s.message.length <= MAX_MESSAGE_LENGTH, s.message);
      assert.ok(s.message.startsWith('Get "https://***@mirror.example.com/v2/": '), s.message);
      assert.ok(s.message.endsWith('…'), 'cut');
    }
    assert.ok(!JSON.stringify(health).includes('s3cr3t'));
  });
});
