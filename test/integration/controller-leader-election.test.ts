import { EventsV1Api, KubeConfig } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { ControllerApp } from '../../src/controller/controller-app.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { renderKubeconfig } from '../../src/envtest/kubeconfig.js';
import { applyObjects } from '../../src/kube/apply.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';
import {
  CONTROLLER_NAME,
  controllerManifestList,
  renderControllerManifests,
} from '../../src/render/controller-manifests.js';
import { useControlPlane } from '../support/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import {
  CONFIG_MAP,
  CTB,
  LogSink,
  NS,
  PULL_SECRET,
  createRuntime,
  metricValue,
  setPullSecret,
  setUpKcp,
  startTestController,
  type Kcp,
} from './controller-fixtures.js';
import { FakeKim } from './fake-kim.js';
import { startTcpValve, type TcpValve } from '../support/tcp-valve.js';

const RUNTIMES = ['rt-a', 'rt-b', 'rt-c', 'rt-d'];
const LEASE = 'rt-bootstrapper-controller';
const TIMING = { leaseDurationMs: 4_000, renewDeadlineMs: 2_500, retryPeriodMs: 500 };

/** A kubeconfig with the controller ServiceAccount's identity (the API server maps the CN to the user). */
async function serviceAccountKubeConfig(cluster: LocalCluster, server = cluster.server): Promise<KubeConfig> {
  const identity = await issueCertificate(cluster.ca, {
    commonName: `system:serviceaccount:${NS}:${CONTROLLER_NAME}`,
    organizations: ['system:serviceaccounts', `system:serviceaccounts:${NS}`],
    usage: 'client',
  });
  const kc = new KubeConfig();
  kc.loadFromString(
    renderKubeconfig({
      name: 'controller-sa',
      server,
      caPem: cluster.caPem,
      clientCertPem: identity.certPem,
      clientKeyPem: identity.keyPem,
    }),
  );
  return kc;
}

describe('two controller replicas with leader election, under the rendered least-privilege RBAC', () => {
  const plane = useControlPlane({ clusters: ['kcp'] });
  let kcp: Kcp;
  let kim: FakeKim;
  const apps: ControllerApp[] = [];
  const logs = new LogSink();
  const proxies: TcpValve[] = [];
  let auth = 0;

  const start = async (kc: KubeConfig): Promise<ControllerApp> => {
    const app = await startTestController(kc, {
      logs,
      leaderElection: { leaseName: LEASE, timing: TIMING },
      modeOptions: {
        signal: 'annotation',
        coalesceMs: 300,
        concurrency: 4,
        resyncMs: 60_000,
        stateConfigMapName: 'rt-bootstrapper-controller-state',
      },
    });
    apps.push(app);
    return app;
  };
  const leaders = (): ControllerApp[] => apps.filter((a) => a.isLeader());
  const oneLeader = (): Promise<ControllerApp> =>
    eventually(() => (leaders().length === 1 ? leaders()[0] : undefined), 30_000, 'exactly one leader');
  const get = async (app: ControllerApp, path: string): Promise<number> =>
    (await fetch(`http://127.0.0.1:${app.port}${path}`)).status;

  /**
   * A content change is signalled exactly once per Runtime (by whoever leads), and nothing else
   * is signalled since `mark` (an index into `kim.signals`, default now): above all no version
   * signalled before, as a leader acting on a stale source cache would.
   */
  const changeSignalledOnce = async (what: string, mark = kim.signals.length): Promise<void> => {
    const before = new Map(kim.consumed);
    await setPullSecret(kcp, `auth-${++auth}`);
    await eventually(() => (kim.since(before).size === RUNTIMES.length ? true : undefined), 30_000, what);
    // Let a second (wrong) signaller show itself: the state must settle as Completed first.
    await eventually(
      async () => {
        const cm = await kcp.core.readNamespacedConfigMap({
          name: 'rt-bootstrapper-controller-state',
          namespace: NS,
        });
        return cm.data?.['annotate-mode.json']?.includes('"Completed"') === true ? true : undefined;
      },
      30_000,
      'the pass to complete',
    );
    const old = new Set(kim.signals.slice(0, mark).map((s) => s.version));
    const since = kim.signals.slice(mark);
    assert.deepEqual(
      since.filter((s) => old.has(s.version)),
      [],
      `${what}: no version signalled before was signalled again`,
    );
    assert.equal(new Set(since.map((s) => s.version)).size, 1, `${what}: one version signalled`);
    assert.deepEqual(
      [...kim.since(before).values()],
      RUNTIMES.map(() => 1),
      `${what}: once per Runtime`,
    );
  };

  before(async () => {
    const cluster = plane().cluster('kcp');
    kcp = await setUpKcp(cluster, cluster.caPem);
    const manifests = renderControllerManifests({
      image: 'example.com/rtb:test',
      namespace: NS,
      pullSecretName: PULL_SECRET,
      clusterTrustBundleName: CTB,
      configMapName: CONFIG_MAP,
    });
    // Everything but the Deployment: the replicas run in this process under the same identity.
    await applyObjects(kcp.kc, controllerManifestList(manifests).slice(0, -1));
    for (const name of RUNTIMES) await createRuntime(kcp, name);
    kim = new FakeKim(kcp);
    await kim.start();
  });

  after(async () => {
    await Promise.all(apps.map((a) => a.stop()));
    await Promise.all(proxies.map((p) => p.stop()));
    await kim.stop();
  });

  test('one leads, the other stands by; both are healthy and ready; a change is signalled once', async () => {
    const cluster = plane().cluster('kcp');
    const a = await start(await serviceAccountKubeConfig(cluster));
    const b = await start(await serviceAccountKubeConfig(cluster));
    const leader = await oneLeader();
    const standby = leader === a ? b : a;
    for (const app of [a, b]) {
      assert.equal(await get(app, '/healthz'), 200);
      assert.equal(await get(app, '/readyz'), 200);
    }
    assert.equal(await metricValue(leader, 'leader_election_master_status', { name: LEASE }), 1);
    assert.equal(await metricValue(standby, 'leader_election_master_status', { name: LEASE }), 0);
    assert.match(
      await (await fetch(`http://127.0.0.1:${leader.port}/metrics`)).text(),
      /controller_runtime_reconcile_total\{controller="annotate-sources"/,
    );
    await changeSignalledOnce('a change with two replicas');
    assert.equal(
      await metricValue(standby, 'rtb_controller_runtimes_signalled_total'),
      0,
      'the standby did nothing',
    );
  });

  test('when the leader stops, it releases the Lease and the standby takes over at once', async (t) => {
    const leader = await oneLeader();
    const standby = apps.find((a) => a !== leader && !a.isLeader())!;
    const stopped = performance.now();
    await leader.stop();
    apps.splice(apps.indexOf(leader), 1);
    await eventually(
      () => (standby.isLeader() ? true : undefined),
      TIMING.leaseDurationMs,
      'the standby to lead',
    );
    t.diagnostic(
      `takeover after a graceful stop: ${Math.round(performance.now() - stopped)} ms (lease ${TIMING.leaseDurationMs} ms)`,
    );
    await changeSignalledOnce('a change after the takeover');
  });

  test('a leader cut off from the API server stops before the standby starts, and can lead again once reconnected', async (t) => {
    const cluster = plane().cluster('kcp');
    // The current leader keeps leading; a new replica behind a proxy joins, and leadership is
    // moved to it by stopping the current one, so the proxied replica is the leader to cut off.
    const proxy = await startTcpValve(cluster.port);
    proxies.push(proxy);
    const proxied = await start(await serviceAccountKubeConfig(cluster, `https://127.0.0.1:${proxy.port}`));
    const first = await oneLeader();
    if (first !== proxied) {
      await first.stop();
      apps.splice(apps.indexOf(first), 1);
      await eventually(() => (proxied.isLeader() ? true : undefined), 30_000, 'the proxied replica to lead');
    }
    // Leading with nothing to do, it renews every retry period over one kept-alive connection:
    // a TLS handshake per renewal is what lost the Lease on a busy KCP. Becoming leader opens
    // the controller's lists and watches first; count once that burst is over.
    const pause = () => new Promise((r) => setTimeout(r, 2 * TIMING.retryPeriodMs));
    let settled = proxy.accepted();
    for (let waited = 0; waited < 20; waited++) {
      await pause();
      if (proxy.accepted() === settled) break;
      settled = proxy.accepted();
    }
    const accepted = proxy.accepted();
    await new Promise((r) => setTimeout(r, 6 * TIMING.retryPeriodMs));
    assert.ok(proxied.isLeader());
    assert.ok(
      proxy.accepted() - accepted <= 1,
      `${proxy.accepted() - accepted} new connections over about 6 renewals`,
    );
    const standby = await start(await serviceAccountKubeConfig(cluster));
    await eventually(
      async () => ((await get(standby, '/readyz')) === 200 ? true : undefined),
      30_000,
      'standby ready',
    );
    assert.equal(standby.isLeader(), false);

    // Watch both by polling the clock-fenced isLeader(); the order is what the design guarantees.
    let leaderStoppedAt: number | undefined;
    let standbyStartedAt: number | undefined;
    const cutAt = performance.now();
    proxy.cut();
    await eventually(
      () => {
        const now = performance.now();
        if (leaderStoppedAt === undefined && !proxied.isLeader()) leaderStoppedAt = now;
        if (standbyStartedAt === undefined && standby.isLeader()) standbyStartedAt = now;
        return leaderStoppedAt !== undefined && standbyStartedAt !== undefined ? true : undefined;
      },
      30_000,
      'the cut-off leader to stop and the standby to take over',
    );
    assert.ok(leaderStoppedAt! < standbyStartedAt!, 'the old leader stopped before the new one started');
    t.diagnostic(
      `cut-off leader stopped ${Math.round(leaderStoppedAt! - cutAt)} ms after the cut; standby led after ${Math.round(standbyStartedAt! - cutAt)} ms (renew deadline ${TIMING.renewDeadlineMs} ms, lease ${TIMING.leaseDurationMs} ms)`,
    );
    await changeSignalledOnce('a change after the failover');

    // The cut-off replica stood for election again: reconnected, it can lead again.
    proxy.restore();
    await eventually(
      async () => ((await get(proxied, '/readyz')) === 200 ? true : undefined),
      30_000,
      'ready',
    );
    // It leads again as soon as it holds the Lease, while its source watches may still be backing
    // off from the partition: it must relist before it acts, never signal the version its cache
    // held before the cut (the one before the failover change), and signal the next change once.
    const mark = kim.signals.length;
    await standby.stop();
    apps.splice(apps.indexOf(standby), 1);
    await eventually(
      () => (proxied.isLeader() ? true : undefined),
      30_000,
      'the reconnected replica to lead again',
    );
    await changeSignalledOnce('a change led by the reconnected replica', mark);
  });

  test('every call of the replicas was allowed by the rendered RBAC', async () => {
    // Stopping flushes pending Events, so a refused Event write would be logged by now.
    await Promise.all(apps.splice(0).map((a) => a.stop()));
    const refused = logs.lines.filter((l) => /forbidden|\b403\b/i.test(l));
    assert.deepEqual(refused, []);
    const events = await kcp.kc.makeApiClient(EventsV1Api).listNamespacedEvent({ namespace: NS });
    const byController = events.items.filter(
      (e) => e.reportingController === 'rt-bootstrapper.kyma-project.io/controller',
    );
    assert.ok(
      byController.some((e) => e.reason === 'SourceChanged'),
      'events were written',
    );
  });
});
