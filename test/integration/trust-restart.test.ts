// test-matrix: kubernetes
/**
 * The trust-bundle restarter on a real API server (no controllers, no kubelet: the test plays the
 * controllers' part of each rollout, test/support/trust-workloads.ts). Replicas run in this
 * process as the webhook's ServiceAccount under exactly the rendered RBAC.
 */
import {
  AdmissionregistrationV1Api,
  BatchV1Api,
  EventsV1Api,
  PolicyV1Api,
  type KubeConfig,
  type KubernetesObject,
} from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import {
  MUTATING_WEBHOOK_CONFIGURATION,
  RUNTIME_NAMESPACE,
  WEBHOOK_DEPLOYMENT,
} from '../../src/api/runtime-names.js';
import {
  CTB_HASH_ANNOTATION,
  CTB_MOUNTED_LABEL,
  RESTART_OPT_OUT_ANNOTATION,
  TRUST_STATUS_ANNOTATION,
  type TrustRestartStatus,
} from '../../src/api/trust-stamp.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { applyObjects } from '../../src/kube/apply.js';
import { renderWebhookManifests, webhookManifestList } from '../../src/render/webhook-manifests.js';
import { createLogger } from '../../src/telemetry/logger.js';
import type { RestartPacing } from '../../src/runtime-agent/trust-restart/restart-actions.js';
import type { TrustRestarter } from '../../src/runtime-agent/trust-restart/trust-restarter.js';
import { useControlPlane } from '../support/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { seedConfigText } from '../support/fixtures.js';
import { asWebhookServiceAccount } from '../support/kcp.js';
import { newBundleText, putBundle, stampedPod, Workloads, type Kind } from '../support/trust-workloads.js';
import { registerWebhook, startTestWebhook, type TestWebhook } from '../support/webhook.js';
import { pluck } from '../support/pluck.js';

const plane = useControlPlane({ clusters: ['runtime'] });
let cluster: LocalCluster;
let admin: KubeConfig;
let sa: KubeConfig;
let w: Workloads;
let current: { pem: string; hash: string };
let seq = 0;

async function rotate(): Promise<string> {
  current = await newBundleText();
  await putBundle(admin, current.pem);
  return current.hash;
}

/**
 * Makes Pods current however fast the tests run: `make` creates them stamped with a new bundle,
 * then that bundle is put in force. Created before its change, they are never taken for Pods
 * made within the delay after it (which may have been given the old file).
 */
async function currentAfter(make: (hash: string) => Promise<void>): Promise<void> {
  const next = await newBundleText();
  await make(next.hash);
  current = next;
  await putBundle(admin, next.pem);
}

/** A webhook replica with the restarter on, under the ServiceAccount. */
async function replica(
  pacing: Partial<RestartPacing> = {},
): Promise<TestWebhook & { restarter: TrustRestarter }> {
  const hook = await startTestWebhook(cluster, {
    kubeConfig: sa,
    ...(process.env.TRUST_DEBUG ? { logger: createLogger({ level: 'debug' }) } : {}),
    trustRestart: {
      namespace: RUNTIME_NAMESPACE,
      pacing: { concurrency: 1, delayMs: 500, deadlineMs: 120_000, ...pacing },
      pollMs: 200,
      idleMs: 300,
      statusMinGapMs: 0,
    },
    runtimeAgent: {
      identity: `replica-${seq++}`,
      leaseTiming: { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 250 },
    },
  });
  const restarter = hook.app.restarter;
  assert.ok(restarter);
  return { ...hook, restarter };
}

/** Waits until `r` is active and has run `n` more passes than now. */
async function passes(r: TrustRestarter, n = 3): Promise<void> {
  await eventually(() => (r.isActive() ? true : undefined), 30_000, 'the restarter to be active');
  const start = r.passes();
  await eventually(() => (r.passes() >= start + n ? true : undefined), 30_000, `${n} more passes`);
}

async function metric(hook: TestWebhook, name: string): Promise<number> {
  const values = (await hook.app.registry.getSingleMetric(name)?.get())?.values ?? [];
  return values.reduce((sum, v) => sum + v.value, 0);
}

async function namespace(name: string): Promise<string> {
  await w.core.createNamespace({ body: { metadata: { name } } });
  return name;
}

/** Whether every Pod of `ns` whose name starts with `prefix` carries our label (and there is one). */
async function labelledIn(ns: string, prefix: string): Promise<boolean> {
  const pods = await w.core.listNamespacedPod({ namespace: ns });
  const mine = pods.items.filter((p) => p.metadata?.name?.startsWith(prefix));
  return mine.length > 0 && mine.every((p) => p.metadata?.labels?.[CTB_MOUNTED_LABEL] === 'true');
}

const patched = async (kind: Kind, ns: string, name: string): Promise<boolean> =>
  (await w.template(kind, ns, name)).hash === current.hash;

describe('the trust-bundle restarter', () => {
  before(async () => {
    cluster = plane().cluster('runtime');
    admin = cluster.kubeConfig();
    w = new Workloads(admin);
    const objects = webhookManifestList(
      renderWebhookManifests({ image: 'example.com/rtb:test', url: 'https://127.0.0.1:1/mutate' }),
    ).slice(0, -1) as KubernetesObject[];
    await applyObjects(admin, objects);
    await w.core.createNamespacedSecret({
      namespace: RUNTIME_NAMESPACE,
      body: { metadata: { name: 'registry-credentials' }, data: { a: 'Yg==' } },
    });
    await w.core.createNamespacedConfigMap({
      namespace: RUNTIME_NAMESPACE,
      body: {
        metadata: { name: 'rt-bootstrapper-config' },
        data: { 'rt-bootstrapper-config.json': seedConfigText() },
      },
    });
    sa = await asWebhookServiceAccount(cluster);
    await rotate();
  });

  test('a first start on Pods stamped with the current bundle (ours or upstream’s) restarts nothing', async () => {
    const ns = await namespace('first');
    await currentAfter(async (hash) => {
      await w.create('Deployment', ns, 'web', 2, hash);
      await w.create('StatefulSet', ns, 'db', 2, hash);
      // Stamped by an upstream install: the annotation and the bundle's volume, no label.
      await w.create('Deployment', ns, 'legacy', 2, hash, { upstream: true });
      // The annotation alone (copied, no mount): never ours to judge.
      await w.core.createNamespacedPod({
        namespace: ns,
        body: {
          metadata: { name: 'upstream', annotations: { [CTB_HASH_ANNOTATION]: hash } },
          spec: { containers: [{ name: 'a', image: 'x' }] },
        },
      });
    });
    const initial = await w.template('Deployment', ns, 'web');
    const hook = await replica();
    try {
      await eventually(
        async () => ((await labelledIn(ns, 'legacy-')) ? true : undefined),
        30_000,
        'the upstream-stamped Pods labelled',
      );
      await passes(hook.restarter);
      assert.deepEqual(await w.template('Deployment', ns, 'web'), initial);
      assert.deepEqual(await w.template('Deployment', ns, 'legacy'), { generation: 1 });
      assert.equal((await w.template('StatefulSet', ns, 'db')).hash, undefined);
      const bystander = await w.core.readNamespacedPod({ name: 'upstream', namespace: ns });
      assert.equal(bystander.metadata?.labels?.[CTB_MOUNTED_LABEL], undefined);
      const plan = hook.restarter.lastPlan();
      assert.ok(plan);
      assert.deepEqual([plan.stalePods, plan.optedOut.length, plan.bare.length], [0, 0, 0]);
      const status = await eventually(async () => {
        const d = await w.apps.readNamespacedDeployment({
          name: WEBHOOK_DEPLOYMENT,
          namespace: RUNTIME_NAMESPACE,
        });
        return d.metadata?.annotations?.[TRUST_STATUS_ANNOTATION];
      });
      const parsed = JSON.parse(status) as TrustRestartStatus;
      assert.deepEqual([parsed.bundle, parsed.stalePods], [current.hash.slice(0, 12), 0]);
    } finally {
      await hook.stop();
      await w.clear(ns);
    }
  });

  test('admission stamps the bundle’s hash and our label on a Pod that gets the mount', async () => {
    const hook = await startTestWebhook(cluster, { kubeConfig: sa });
    try {
      const manifests = renderWebhookManifests({
        image: 'x',
        url: hook.url,
        caBundlePem: hook.ca.certPem,
        failurePolicy: 'Fail',
      });
      await registerWebhook(cluster, manifests.mutatingWebhookConfiguration);
      const pod = await eventually(
        async () => {
          const p = await w.core.createNamespacedPod({
            namespace: RUNTIME_NAMESPACE,
            body: {
              metadata: { generateName: 'stamped-' },
              spec: { containers: [{ name: 'a', image: 'replace.me/a:1' }] },
            },
            dryRun: 'All',
          });
          return p.metadata?.annotations?.[CTB_HASH_ANNOTATION] === current.hash ? p : undefined;
        },
        20_000,
        'a stamped Pod',
      );
      assert.equal(pod.metadata?.labels?.[CTB_MOUNTED_LABEL], 'true');
      const optedOut = await w.core.createNamespacedPod({
        namespace: RUNTIME_NAMESPACE,
        body: {
          metadata: {
            generateName: 'plain-',
            annotations: { 'rt-cfg.kyma-project.io/add-cluster-trust-bundle': 'false' },
          },
          spec: { containers: [{ name: 'a', image: 'replace.me/a:1' }] },
        },
        dryRun: 'All',
      });
      assert.equal(optedOut.metadata?.annotations?.[CTB_HASH_ANNOTATION], undefined);
      assert.equal(optedOut.metadata?.labels?.[CTB_MOUNTED_LABEL], undefined);
    } finally {
      await admin
        .makeApiClient(AdmissionregistrationV1Api)
        .deleteMutatingWebhookConfiguration({ name: MUTATING_WEBHOOK_CONFIGURATION });
      await hook.stop();
    }
  });

  test('a bundle change rolls a Deployment of 3 (with a PDB), a StatefulSet and a DaemonSet, one at a time', async () => {
    const ns = await namespace('roll');
    await currentAfter(async (hash) => {
      await w.create('Deployment', ns, 'web', 3, hash);
      await w.create('StatefulSet', ns, 'db', 2, hash);
      await w.create('DaemonSet', ns, 'agent', 2, hash);
    });
    await admin.makeApiClient(PolicyV1Api).createNamespacedPodDisruptionBudget({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: { minAvailable: 2, selector: { matchLabels: { app: 'web' } } },
      },
    });
    const webPods = (await w.podNames(ns)).filter((n) => n.startsWith('web-'));
    const hook = await replica();
    try {
      await passes(hook.restarter, 2);
      await rotate();
      // Plan order: one namespace, then kind, then name.
      const order: [Kind, string][] = [
        ['DaemonSet', 'agent'],
        ['Deployment', 'web'],
        ['StatefulSet', 'db'],
      ];
      for (const [i, [kind, name]] of order.entries()) {
        await eventually(
          async () => ((await patched(kind, ns, name)) ? true : undefined),
          30_000,
          `${kind} ${name}`,
        );
        // While it rolls, the next waits, however many passes run.
        await passes(hook.restarter, 4);
        for (const [k, n] of order.slice(i + 1))
          assert.equal(await patched(k, ns, n), false, `${k} ${n} waits`);
        if (i <= 1)
          assert.deepEqual(
            (await w.podNames(ns)).filter((n) => webPods.includes(n)),
            webPods,
            'the restarter never removes a Deployment’s Pod itself: all 3 run until the rollout replaces them',
          );
        await w.completeRollout(kind, ns, name, current.hash);
      }
      await passes(hook.restarter, 3);
      assert.equal(hook.restarter.lastPlan()?.stalePods, 0);
      assert.equal(await metric(hook, 'rtb_trust_restart_owners_restarted_total'), 3);
      assert.equal(await metric(hook, 'rtb_trust_restart_evictions_total'), 0);
      for (const [kind, name] of order)
        assert.equal((await w.template(kind, ns, name)).generation, 2, `${name} once`);
      const events = await admin.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: ns });
      assert.deepEqual(
        events.items
          .filter((e) => e.reason === 'TrustBundleChanged')
          .map((e) => e.regarding?.name)
          .sort(),
        ['agent', 'db', 'web'],
      );
      assert.ok(events.items.every((e) => !(e.note ?? '').includes(current.pem.slice(30, 60))));
    } finally {
      await hook.stop();
      await w.clear(ns);
    }
  });

  test('a Job’s Pod is evicted, retried while a PDB refuses; bare, current and opted-out Pods are left alone', async () => {
    const ns = await namespace('evict');
    const stale = 'f'.repeat(64);
    const job = await admin.makeApiClient(BatchV1Api).createNamespacedJob({
      namespace: ns,
      body: {
        metadata: { name: 'once' },
        spec: { template: { spec: { restartPolicy: 'Never', containers: [{ name: 'a', image: 'x' }] } } },
      },
    });
    const owner = {
      apiVersion: 'batch/v1',
      kind: 'Job',
      name: 'once',
      uid: job.metadata?.uid ?? '',
      controller: true,
    };
    await w.core.createNamespacedPod({
      namespace: ns,
      body: stampedPod('once-0', { hash: stale, owner, app: 'once' }),
    });
    // A Pending Pod is evicted whatever its budget says; a running one is not.
    await w.markRunning(ns, 'once-0');
    await currentAfter(async (hash) => {
      await w.core.createNamespacedPod({ namespace: ns, body: stampedPod('once-fresh', { hash, owner }) });
    });
    await w.core.createNamespacedPod({ namespace: ns, body: stampedPod('lonely', { hash: stale }) });
    await w.core.createNamespacedPod({
      namespace: ns,
      body: stampedPod('reloads-itself', {
        hash: stale,
        owner,
        annotations: { [RESTART_OPT_OUT_ANNOTATION]: 'false' },
      }),
    });
    await w.create('Deployment', ns, 'quiet', 2, stale, {
      annotations: { [RESTART_OPT_OUT_ANNOTATION]: 'false' },
    });
    const policy = admin.makeApiClient(PolicyV1Api);
    // No disruption controller runs here: the budget allows nothing until the test says so.
    await policy.createNamespacedPodDisruptionBudget({
      namespace: ns,
      body: {
        metadata: { name: 'once' },
        spec: { minAvailable: 1, selector: { matchLabels: { app: 'once' } } },
      },
    });
    const hook = await replica();
    try {
      await eventually(
        async () =>
          (await metric(hook, 'rtb_trust_restart_evictions_blocked_total')) >= 2 ? true : undefined,
        60_000,
        'the eviction refused and retried',
      );
      assert.ok((await w.podNames(ns)).includes('once-0'));
      const pdb = await policy.readNamespacedPodDisruptionBudget({ name: 'once', namespace: ns });
      pdb.status = {
        observedGeneration: pdb.metadata?.generation ?? 1,
        currentHealthy: 2,
        desiredHealthy: 1,
        disruptionsAllowed: 1,
        expectedPods: 2,
      };
      await policy.replaceNamespacedPodDisruptionBudgetStatus({ name: 'once', namespace: ns, body: pdb });
      await eventually(
        async () => ((await w.podNames(ns)).includes('once-0') ? undefined : true),
        60_000,
        'once-0 evicted',
      );
      await passes(hook.restarter, 3);
      assert.deepEqual(await w.podNames(ns), [
        'lonely',
        'once-fresh',
        'quiet-0',
        'quiet-1',
        'reloads-itself',
      ]);
      assert.equal((await w.template('Deployment', ns, 'quiet')).hash, undefined);
      const plan = hook.restarter.lastPlan();
      assert.ok(plan);
      assert.deepEqual(pluck(plan.bare, 'name'), ['lonely']);
      assert.deepEqual(
        pluck(plan.optedOut, 'name'),
        ['quiet-0', 'quiet-1', 'reloads-itself'],
        'opted out on the Pod, or on its owner (read once)',
      );
      assert.equal(plan.stalePods, 1, 'only the bare Pod: opted-out ones are not stale');
      assert.equal(await metric(hook, 'rtb_trust_restart_stale_pods'), 1);
      assert.equal(await metric(hook, 'rtb_trust_restart_opted_out_pods'), 3);
      assert.equal(await metric(hook, 'rtb_trust_restart_evictions_total'), 1);
      assert.equal(await metric(hook, 'rtb_trust_restart_bare_pods'), 1);
    } finally {
      await hook.stop();
      await w.clear(ns);
    }
  });

  test('Pods an upstream install stamped (no label) are labelled and, once stale, restarted through their owner', async () => {
    const ns = await namespace('upstream');
    await currentAfter((hash) => w.create('Deployment', ns, 'legacy', 2, hash, { upstream: true }));
    const hook = await replica();
    try {
      await eventually(
        async () => ((await labelledIn(ns, 'legacy-')) ? true : undefined),
        30_000,
        'labelled on becoming active',
      );
      // Stamped while this replica is active: labelled by the scan at the bundle change.
      await w.create('Deployment', ns, 'late', 1, current.hash, { upstream: true });
      await passes(hook.restarter, 2);
      assert.equal(await labelledIn(ns, 'late-'), false);
      await rotate();
      // One at a time, in the order they became known (the scan may label `late` after a plan).
      const left = new Set(['late', 'legacy']);
      while (left.size > 0) {
        const name = await eventually(
          async () => {
            for (const n of left) if (await patched('Deployment', ns, n)) return n;
            return undefined;
          },
          30_000,
          `${[...left].join(' or ')} restarted`,
        );
        for (const other of left)
          if (other !== name) assert.equal(await patched('Deployment', ns, other), false);
        left.delete(name);
        await w.completeRollout('Deployment', ns, name, current.hash);
      }
      assert.ok(await labelledIn(ns, 'late-'));
      await passes(hook.restarter, 3);
      assert.equal(hook.restarter.lastPlan()?.stalePods, 0);
      for (const name of ['late', 'legacy'])
        assert.equal((await w.template('Deployment', ns, name)).generation, 2, `${name} once`);
    } finally {
      await hook.stop();
      await w.clear(ns);
    }
  });

  test('the active restarter stops mid-way: another replica takes over and restarts nothing twice', async () => {
    const ns = await namespace('failover');
    await currentAfter(async (hash) => {
      await w.create('Deployment', ns, 'x', 2, hash);
      await w.create('Deployment', ns, 'y', 2, hash);
    });
    const replicas = [await replica(), await replica()];
    try {
      await eventually(
        () => (replicas.some((r) => r.restarter.isActive()) ? true : undefined),
        30_000,
        'a leader',
      );
      await rotate();
      await eventually(async () => ((await patched('Deployment', ns, 'x')) ? true : undefined), 30_000, 'x');
      // Found again: under load a term may end and the next begin between the two looks.
      const active = await eventually(
        () => replicas.find((r) => r.restarter.isActive()),
        30_000,
        'the active replica',
      );
      await active.stop();
      const standby = replicas.find((r) => r !== active)!;
      await passes(standby.restarter, 4);
      assert.equal(
        await patched('Deployment', ns, 'y'),
        false,
        'y waits for x’s rollout under the new leader',
      );
      assert.equal((await w.template('Deployment', ns, 'x')).generation, 2, 'x restarted once');
      await w.completeRollout('Deployment', ns, 'x', current.hash);
      await eventually(
        async () => ((await patched('Deployment', ns, 'y')) ? true : undefined),
        30_000,
        'y restarted',
      );
      await w.completeRollout('Deployment', ns, 'y', current.hash);
      await passes(standby.restarter, 3);
      assert.equal((await w.template('Deployment', ns, 'x')).generation, 2);
      assert.equal((await w.template('Deployment', ns, 'y')).generation, 2);
    } finally {
      for (const r of replicas) await r.stop();
      await w.clear(ns);
    }
  });

  test('two bundle changes in quick succession restart each owner once', async () => {
    const ns = await namespace('quick');
    await currentAfter(async (hash) => {
      await w.create('Deployment', ns, 'q', 2, hash);
      await w.create('StatefulSet', ns, 's', 1, hash);
    });
    const hook = await replica({ delayMs: 3_000, concurrency: 2 });
    try {
      await passes(hook.restarter, 2);
      await rotate();
      await rotate();
      for (const [kind, name] of [
        ['Deployment', 'q'],
        ['StatefulSet', 's'],
      ] as const) {
        await eventually(
          async () => ((await patched(kind, ns, name)) ? true : undefined),
          30_000,
          `${name} restarted`,
        );
        await w.completeRollout(kind, ns, name, current.hash);
      }
      await passes(hook.restarter, 3);
      assert.equal((await w.template('Deployment', ns, 'q')).generation, 2);
      assert.equal((await w.template('StatefulSet', ns, 's')).generation, 2);
      assert.equal(await metric(hook, 'rtb_trust_restart_owners_restarted_total'), 2);
    } finally {
      await hook.stop();
      await w.clear(ns);
    }
  });
});
