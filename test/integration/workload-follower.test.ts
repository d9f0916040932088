// test-matrix: kubernetes
/**
 * The webhook's workload follower on a real API server: Pods stamped as the admission stamps
 * them, their status set through the status subresource as a kubelet would (no Pod runs here;
 * the real node comes with the e2e suite), two followers in this process as the webhook's
 * ServiceAccount under exactly the rendered RBAC, one leading at a time.
 */
import {
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
  type V1ContainerStatus,
} from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import { FEATURE_ADD_IMG_PULL_SECRET } from '../../src/api/webhook-features.js';
import { WEBHOOK_STATUS_CONFIG_MAP } from '../../src/api/webhook-status.js';
import {
  ORIGINAL_IMAGES_ANNOTATION,
  REVISION_ANNOTATION,
  REVISION_LABEL,
  WORKLOADS_KEY,
  WORKLOAD_FIELD_MANAGER,
  readWorkloads,
  writeWorkloads,
  type RevisionHealth,
} from '../../src/api/workload-health.js';
import { eventually } from '../../src/envtest/eventually.js';
import { applyObjects } from '../../src/kube/apply.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { WebhookStatusReporter } from '../../src/webhook/status-reporter.js';
import { originalKey } from '../../src/runtime-agent/workload-health/original-key.js';
import {
  startWorkloadFollower,
  type RevisionInForce,
  type WorkloadFollower,
} from '../../src/runtime-agent/workload-health/workload-follower.js';
import { useControlPlane } from '../support/control-plane.js';
import { webhookRuntime } from '../support/webhook-runtime.js';

const plane = useControlPlane({ clusters: ['runtime'] });
/** The set's overrides: Docker Hub to the mirror, as the webhook would rewrite `docker.io/app:1`. */
const MIRROR = { 'docker.io': 'mirror.example.com' };
const IMAGE = 'mirror.example.com/library/app:1';
/** The revision in force on the followers' runtime, and its overrides. */
let inForce: RevisionInForce = { revision: 'v1', overrides: MIRROR };
const SECRET = 'registry-credentials';
const WITH_SECRET = 'wf-with-secret';
const WITHOUT_SECRET = 'wf-without-secret';
let admin: KubeConfig;
let core: CoreV1Api;
let sa: KubeConfig;

interface Replica {
  readonly follower: WorkloadFollower;
  readonly registry: Registry;
  active: boolean;
}
const replicas: Replica[] = [];

function replica(active: boolean): Replica {
  const registry = new Registry();
  const r: Replica = {
    registry,
    active,
    follower: startWorkloadFollower({
      access: sa,
      isActive: () => r.active,
      settings: () => ({ pullSecretName: SECRET }),
      inForce: () => inForce,
      namespace: RUNTIME_NAMESPACE,
      registry,
      logger: silentLogger(),
      pollMs: 100,
      writeGapMs: 200,
      retryBaseMs: 200,
    }),
  };
  replicas.push(r);
  return r;
}

async function metric(r: Replica, name: string, labels: Record<string, string> = {}): Promise<number> {
  const values = (await r.registry.getSingleMetric(name)?.get())?.values ?? [];
  return values
    .filter((v) => Object.entries(labels).every(([k, l]) => v.labels[k] === l))
    .reduce((sum, v) => sum + v.value, 0);
}

type Status = Partial<V1ContainerStatus>;

/**
 * A Pod as the admission leaves it: the revision label and annotation, the original images, and
 * our pull Secret where an image was rewritten (unless the Pod opted out of it).
 */
async function stampedPod(
  namespace: string,
  name: string,
  o: {
    revision?: string;
    rewritten?: boolean;
    pullSecret?: boolean;
    optedOut?: boolean;
    image?: string;
    original?: string;
  } = {},
): Promise<void> {
  const revision = o.revision ?? 'v1';
  const original = o.original ?? 'docker.io/app:1';
  const pullSecret = o.optedOut !== true && (o.pullSecret ?? o.rewritten !== false);
  await core.createNamespacedPod({
    namespace,
    body: {
      metadata: {
        name,
        labels: { [REVISION_LABEL]: revision },
        annotations: {
          [REVISION_ANNOTATION]: revision,
          ...(o.optedOut === true ? { [FEATURE_ADD_IMG_PULL_SECRET]: 'false' } : {}),
          ...(o.rewritten === false
            ? {}
            : { [ORIGINAL_IMAGES_ANNOTATION]: JSON.stringify({ app: original }) }),
        },
      },
      spec: {
        containers: [{ name: 'app', image: o.image ?? IMAGE }],
        ...(pullSecret ? { imagePullSecrets: [{ name: SECRET }] } : {}),
      },
    },
  });
}

/** What a kubelet would write: the container's status. */
async function kubelet(namespace: string, name: string, status: Status, image = IMAGE): Promise<void> {
  await kubeRequest(admin, {
    method: 'PATCH',
    path: `/api/v1/namespaces/${namespace}/pods/${name}/status`,
    body: {
      status: {
        phase: 'Pending',
        containerStatuses: [
          {
            name: 'app',
            image,
            imageID: '',
            ready: false,
            restartCount: 0,
            ...status,
          },
        ],
      },
    },
    parseResponse: false,
  });
}

const waiting = (reason: string, message: string): Status => ({ state: { waiting: { reason, message } } });
const running: Status = {
  started: true,
  state: { running: { startedAt: new Date('2026-11-27T10:00:00Z') } },
};
const crashLoop: Status = {
  restartCount: 3,
  state: { waiting: { reason: 'CrashLoopBackOff', message: 'back-off 40s restarting failed container' } },
  lastState: {
    terminated: {
      exitCode: 1,
      reason: 'Error',
      startedAt: new Date('2026-11-27T10:00:00Z'),
      finishedAt: new Date('2026-11-27T10:00:01Z'),
    },
  },
};

async function configMap(): Promise<{ data: Record<string, string>; managers: string[] } | undefined> {
  try {
    const cm = await core.readNamespacedConfigMap({
      namespace: RUNTIME_NAMESPACE,
      name: WEBHOOK_STATUS_CONFIG_MAP,
    });
    return { data: cm.data ?? {}, managers: (cm.metadata?.managedFields ?? []).map((f) => f.manager ?? '') };
  } catch {
    return undefined;
  }
}

/** Waits until the ConfigMap's report for `revision` satisfies `ok`; returns it. */
async function reported(
  revision: string,
  ok: (h: RevisionHealth) => boolean,
  what: string,
): Promise<RevisionHealth> {
  return eventually(
    async () => {
      const h = readWorkloads((await configMap())?.data[WORKLOADS_KEY])?.[revision];
      return h !== undefined && ok(h) ? h : undefined;
    },
    30_000,
    what,
    100,
  );
}

describe('the workload follower', () => {
  before(async () => {
    ({ admin, core, sa } = await webhookRuntime(plane().cluster('runtime')));
    for (const name of [WITH_SECRET, WITHOUT_SECRET])
      await core.createNamespace({ body: { metadata: { name } } });
    await core.createNamespacedSecret({
      namespace: WITH_SECRET,
      body: { metadata: { name: SECRET }, type: 'Opaque', data: { a: 'Yg==' } },
    });
  });

  after(async () => {
    await Promise.all(replicas.map((r) => r.follower.stop()));
  });

  test('counts what the change caused, not what it did not; only the leader writes', async () => {
    const a = replica(true);
    const b = replica(false);
    const ns = WITH_SECRET;
    await stampedPod(ns, 'rewritten-pull');
    await stampedPod(ns, 'unrewritten-pull', { rewritten: false });
    await stampedPod(ns, 'crash-loop');
    await stampedPod(ns, 'healthy');
    await stampedPod(ns, 'secret-present', { rewritten: false, pullSecret: true });
    await stampedPod(WITHOUT_SECRET, 'secret-missing', { rewritten: false, pullSecret: true });
    await kubelet(ns, 'rewritten-pull', waiting('ImagePullBackOff', 'Back-off pulling image "${IMAGE}"'));
    await kubelet(ns, 'unrewritten-pull', waiting('ErrImagePull', 'not found'));
    await kubelet(ns, 'crash-loop', crashLoop);
    await kubelet(ns, 'healthy', running);
    await kubelet(ns, 'secret-present', waiting('ErrImagePull', 'unauthorized'));
    await kubelet(
      WITHOUT_SECRET,
      'secret-missing',
      waiting('ErrImagePull', 'Get "https://bob:s3cr3t@mirror.example.com/v2/": unauthorized'),
    );

    const h = await reported(
      'v1',
      (r) => r.pods === 6 && r.started === 2 && r.failing === 2,
      'the report of v1',
    );
    assert.equal(h.failedPods, 2);
    assert.deepEqual(h.samples.map((s) => `${s.kind} ${s.pod}`).sort(), [
      `image-pull ${WITH_SECRET}/rewritten-pull`,
      `pull-secret-missing ${WITHOUT_SECRET}/secret-missing`,
    ]);
    const pull = h.samples.find((s) => s.kind === 'image-pull');
    assert.equal(pull?.registry, 'mirror.example.com');
    assert.equal(pull.reason, 'ImagePullBackOff');
    assert.equal(pull.image, IMAGE);
    const missing = h.samples.find((s) => s.kind === 'pull-secret-missing');
    assert.ok(missing?.message?.includes('https://***@mirror.example.com'), missing?.message);
    assert.ok(!JSON.stringify(h).includes('s3cr3t'));

    assert.equal(await metric(a, 'rtb_webhook_workload_followed_pods'), 6);
    assert.equal(await metric(a, 'rtb_webhook_workload_failures_total', { kind: 'image-pull' }), 1);
    assert.equal(await metric(a, 'rtb_webhook_workload_failures_total', { kind: 'pull-secret-missing' }), 1);
    assert.ok((await metric(a, 'rtb_webhook_workload_report_writes_total', { result: 'ok' })) >= 1);
    assert.equal(await metric(b, 'rtb_webhook_workload_report_writes_total'), 0, 'the standby never writes');
    assert.equal(await metric(b, 'rtb_webhook_workload_followed_pods'), 0);
    assert.deepEqual(b.follower.report(), {});
    // As written: members the report leaves undefined are not in its JSON.
    assert.deepEqual(readWorkloads(writeWorkloads(a.follower.report()))?.v1, h);
  });

  test('a deleted failing Pod stays counted; our Secret appearing clears its failure', async () => {
    await core.deleteNamespacedPod({ namespace: WITH_SECRET, name: 'rewritten-pull', gracePeriodSeconds: 0 });
    await reported('v1', (r) => r.pods === 5 && r.failing === 1 && r.failedPods === 2, 'the deletion');
    await core.createNamespacedSecret({
      namespace: WITHOUT_SECRET,
      body: { metadata: { name: SECRET }, type: 'Opaque', data: { a: 'Yg==' } },
    });
    const h = await reported('v1', (r) => r.failing === 0, 'the Secret to clear the failure');
    assert.equal(h.failedPods, 2, 'it failed once');
    assert.equal(h.samples.length, 2, 'samples stay');
  });

  test("the other replicas' status writes leave the report; a new leader takes it over", async () => {
    const [a, b] = replicas;
    assert.ok(a && b);
    // Another replica writing the rest of the ConfigMap under the status reporter's manager.
    const reporter = new WebhookStatusReporter(
      sa,
      { namespace: RUNTIME_NAMESPACE, name: WEBHOOK_STATUS_CONFIG_MAP },
      silentLogger(),
    );
    reporter.offered('v1', { accepted: true });
    await eventually(
      async () => ((await configMap())?.data.loadedVersion === 'v1' ? true : undefined),
      15_000,
      'the status write',
    );
    reporter.stop();
    const cm = await configMap();
    assert.ok(cm?.data[WORKLOADS_KEY] !== undefined, 'the report is still there');
    assert.ok(cm.managers.includes(WORKLOAD_FIELD_MANAGER));
    // And an apply of the status under its manager again with fewer keys removes only its own.
    await applyObjects(
      sa,
      [
        {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: { name: WEBHOOK_STATUS_CONFIG_MAP, namespace: RUNTIME_NAMESPACE },
          data: {},
        } as KubernetesObject,
      ],
      { fieldManager: 'rt-bootstrapper-webhook' },
    );
    assert.ok((await configMap())?.data[WORKLOADS_KEY] !== undefined);

    // Leadership moves: b takes over the report, with the deleted Pod's failure.
    a.active = false;
    b.active = true;
    // A write a had in flight when it stepped down may still land; none after it stepped down.
    await eventually(
      async () => ((await metric(a, 'rtb_webhook_workload_followed_pods')) === 0 ? true : undefined),
      30_000,
      'a to step down',
    );
    const writesBefore = await metric(a, 'rtb_webhook_workload_report_writes_total');
    await eventually(
      async () => ((await metric(b, 'rtb_webhook_workload_followed_pods')) === 5 ? true : undefined),
      30_000,
      'b to follow',
    );
    await stampedPod(WITH_SECRET, 'new-failure');
    await kubelet(WITH_SECRET, 'new-failure', waiting('ErrImagePull', 'manifest unknown'));
    const h = await reported('v1', (r) => r.pods === 6 && r.failing === 1, 'b to report the new failure');
    assert.equal(h.failedPods, 3, 'the two of the previous leader and the new one');
    assert.equal(
      await metric(a, 'rtb_webhook_workload_report_writes_total'),
      writesBefore,
      'a no longer writes',
    );
    assert.equal(await metric(a, 'rtb_webhook_workload_followed_pods'), 0);
    assert.ok((await metric(b, 'rtb_webhook_workload_report_writes_total', { result: 'ok' })) >= 1);
  });

  test('revisions are reported apart, and a follower stops cleanly', async () => {
    const [, b] = replicas;
    assert.ok(b);
    inForce = { revision: 'v2', overrides: MIRROR };
    await stampedPod(WITH_SECRET, 'v2-pod', { revision: 'v2' });
    await kubelet(WITH_SECRET, 'v2-pod', running);
    const v2 = await reported('v2', (r) => r.pods === 1 && r.started === 1, 'the second revision');
    assert.equal(v2.failedPods, 0);
    await b.follower.stop();
    assert.equal(await metric(b, 'rtb_webhook_workload_followed_pods'), 0);
  });
  test("a namespace user's forged stamp counts nothing; a failure is a regression only where its original ran before", async () => {
    const ns = WITH_SECRET;
    // The stable set moved nothing: its Pod of docker.io/app:1 ran as asked (stamped by another feature).
    inForce = { revision: 'r0', overrides: {} };
    const c = replica(true);
    await stampedPod(ns, 'stable-app', { revision: 'r0', rewritten: false, image: 'docker.io/app:1' });
    await kubelet(ns, 'stable-app', running, 'docker.io/app:1');
    await reported('r0', (r) => r.started === 1 && (r.ran?.length ?? 0) === 1, 'the stable Pod to run');
    // The new set sends Docker Hub to the mirror, which lacks the app: a regression.
    inForce = { revision: 'r1', overrides: MIRROR };
    // The same image in a Pod that opted out of our pull Secret: the mirror refuses it without our
    // credentials, its own choice (its status is followed before the failures the report waits for).
    await stampedPod(ns, 'opted-out', { revision: 'r1', optedOut: true });
    await kubelet(ns, 'opted-out', waiting('ErrImagePull', 'pull access denied: unauthorized'));
    await stampedPod(ns, 'regressed', { revision: 'r1' });
    await kubelet(ns, 'regressed', waiting('ErrImagePull', 'manifest unknown'));
    // Forged (created while the webhook let Pods through): an image the set would never run...
    const PRIVATE = 'docker.io/someone/private:1';
    await stampedPod(ns, 'forged-mismatch', { revision: 'r1', original: PRIVATE, image: PRIVATE });
    await kubelet(ns, 'forged-mismatch', waiting('ErrImagePull', 'pull access denied'), PRIVATE);
    // ...one the set would run but that never ran anywhere under the stable set...
    const PRIVATE_MIRRORED = 'mirror.example.com/someone/private:1';
    await stampedPod(ns, 'forged-unproven', { revision: 'r1', original: PRIVATE, image: PRIVATE_MIRRORED });
    await kubelet(ns, 'forged-unproven', waiting('ErrImagePull', 'not found'), PRIVATE_MIRRORED);
    // ...and a revision this webhook never served.
    await stampedPod(ns, 'forged-revision', { revision: 'r-forged' });
    await kubelet(ns, 'forged-revision', waiting('ErrImagePull', 'not found'));

    const h = await reported('r1', (r) => r.pods === 4 && r.failedPods >= 2, "the new set's report");
    assert.equal(h.failedPods, 2, 'the opted-out Pod is not among them');
    assert.equal(h.regressions, 1, 'only the Pod whose original ran under the stable set');
    assert.ok(!h.samples.some((s) => s.pod.endsWith('/opted-out')), JSON.stringify(h.samples));
    assert.deepEqual(h.unproven, [{ image: originalKey(PRIVATE), pods: 1 }]);
    const forged = await reported('r-forged', (r) => r.pods === 1, 'the forged revision');
    assert.equal(forged.failedPods, 0);
    // The rules of both sets are kept for the next leader.
    const rules = JSON.parse((await configMap())?.data.revisionRules ?? '{}') as Record<string, unknown>;
    assert.deepEqual(
      Object.keys(rules).filter((k) => k.startsWith('r')),
      ['r0', 'r1'],
    );
    await c.follower.stop();
  });
});
