/**
 * What sharded replicas of direct mode share besides the runtimes (direct-shards.test.ts covers
 * the shares): the Runtime mirror (`--auto-create`), relayed drift repairs in the repair
 * latency, the CA, and fencing by the shard Lease. Three in-process replicas, each reaching the
 * KCP through a TCP valve of its own (so one can be partitioned), on a KCP with KIM's Runtimes;
 * eight runtimes share one real API server, and one (`rt-solo`) has its own behind a valve that
 * can hold its answers back (a replica stalled in the middle of a reconcile).
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { CoreV1Api, KubeConfig } from '@kubernetes/client-node';
import { Registry } from 'prom-client';
import { runtimeCrd } from '../../src/api/crds.js';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import { startDirectMode } from '../../src/controller/direct/direct-mode.js';
import type { DirectMode } from '../../src/controller/direct/direct-mode-options.js';
import { SKR_DOMAIN_ANNOTATION } from '../../src/controller/direct/runtime-domain.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { freePort } from '../../src/envtest/free-port.js';
import { ensureCrds } from '../../src/kube/crd.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import type { LeaderElectionTiming } from '../../src/kube/leader-election-timing.js';
import { CaStore } from '../../src/pki/ca-store.js';
import { apiServerRequests } from '../support/apiserver-metrics.js';
import { useControlPlane } from '../support/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { reportPullSecretDrift, reportPullSecretDriftTo } from '../support/drift-report.js';
import { captureLogs, type CapturedLogs } from '../support/log-capture.js';
import { DirectFleet } from '../support/direct-fleet.js';
import { driftListenerOptions } from '../support/drift-listener-options.js';
import {
  coreOf,
  directModeOptions,
  putKubeconfigSecret,
  RB_PATH,
  allBootstrappersReady,
  listRuntimeBootstrappers,
  keepDeploymentsAvailable,
  kubeconfigFor,
} from '../support/kcp.js';
import { startTcpValve, type TcpValve } from '../support/tcp-valve.js';
import { createRuntime, kcpClients } from './controller-fixtures.js';

const IDS = Array.from({ length: 8 }, (_, i) => `rt-${i + 1}`);
const SOLO = 'rt-solo';
const ALL = [...IDS, SOLO];
const plane = useControlPlane({ clusters: ['kcp', 'pool', 'solo'] });
const kcp = () => plane().cluster('kcp');
/** Short Leases, so a partition moves runtimes within seconds. */
const TIMING: LeaderElectionTiming = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 };
const NAMES = ['replica-a', 'replica-b', 'replica-c'] as const;

interface Replica {
  readonly name: string;
  readonly mode: DirectMode;
  readonly registry: Registry;
  readonly driftPort: number;
  /** Its way to the KCP. */
  readonly valve: TcpValve;
  readonly logs: CapturedLogs;
}
const replicas = new Map<string, Replica>();
/** Per runtime, the replicas that worked it, in order of starting (ShardedWork's `onWork` hook). */
const work: { replica: string; runtimeId: string; phase: 'start' | 'end' }[] = [];
const fleet = new DirectFleet(kcp);
let soloValve: TcpValve;

/** A system:masters kubeconfig of `cluster` reaching it at `port` (a valve). */
const adminKubeconfig = (cluster: LocalCluster, port: number): Promise<string> =>
  kubeconfigFor(cluster, 'rtb-controller', ['system:masters'], `https://127.0.0.1:${port}`);

const portOf = (cluster: LocalCluster): number => Number(new URL(cluster.server).port);

async function startReplica(name: string): Promise<Replica> {
  const registry = new Registry();
  const driftPort = await freePort();
  const valve = await startTcpValve(portOf(kcp()));
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromString(await adminKubeconfig(kcp(), valve.port));
  const logs = captureLogs('info');
  const mode = await startDirectMode(
    directModeOptions(kcp(), fleet.sources, logs.logger, {
      kubeConfig,
      registry,
      autoCreateSelector: '',
      // A stalled answer (the solo runtime's valve) is waited for, however long the test holds it.
      runtimeTimeoutMs: 120_000,
      // One URL for every replica: what runtimes are told must not depend on who wrote it.
      ...driftListenerOptions(driftPort, { listenerUrl: 'https://127.0.0.1:1' }),
      shard: {
        identity: name,
        timing: TIMING,
        onWork: (runtimeId, phase) => {
          work.push({ replica: name, runtimeId, phase });
        },
      },
    }),
  );
  const replica = { name, mode, registry, driftPort, valve, logs };
  replicas.set(name, replica);
  return replica;
}

const replica = (name: string): Replica => {
  const r = replicas.get(name);
  assert.ok(r, `${name} runs`);
  return r;
};

/** The sum of a metric's samples named `sample` (labels as given must match), on a registry. */
async function sampleOf(r: Replica, metric: string, sample = metric, labels: Record<string, string> = {}) {
  const values = (await r.registry.getSingleMetric(metric)?.get())?.values ?? [];
  return values
    .filter((v) => ((v as { metricName?: string }).metricName ?? metric) === sample)
    .filter((v) => Object.entries(labels).every(([k, x]) => String(v.labels[k]) === x))
    .reduce((sum, v) => sum + v.value, 0);
}

/** Waits until every runtime's RuntimeBootstrapper exists and is Ready with one version other than `not`. */
const allReady = (not?: string): Promise<string> => allBootstrappersReady(kcp(), ALL.length, not);

/** How many passes `name` has in flight on runtime `id`. */
const inFlight = (name: string, id: string): number =>
  work
    .filter((w) => w.replica === name && w.runtimeId === id)
    .reduce((n, w) => n + (w.phase === 'start' ? 1 : -1), 0);

/** The replica that started work on `id` last. */
const lastWorker = (id: string): string | undefined =>
  work.filter((w) => w.runtimeId === id && w.phase === 'start').at(-1)?.replica;

describe('direct mode replicas: auto-create, relayed repairs, the CA, fenced writes', () => {
  before(async () => {
    await fleet.prepare(Object.fromEntries(IDS.map((id) => [id, plane().cluster('pool')])));
    await ensureCrds(kcp().kubeConfig(), [runtimeCrd()]);
    soloValve = await startTcpValve(portOf(plane().cluster('solo')));
    fleet.onStop(() => soloValve.stop());
    await putKubeconfigSecret(kcp(), SOLO, await adminKubeconfig(plane().cluster('solo'), soloValve.port));
    fleet.onStop(async () => {
      for (const r of replicas.values()) {
        r.valve.restore();
        await r.mode.stop();
        await r.valve.stop();
      }
    });
    fleet.onStop(() => {
      soloValve.release();
    });
    // No kubelet: the webhook Deployment of each runtime server is reported available whenever it exists.
    fleet.onStop(keepDeploymentsAvailable(() => ['pool', 'solo'].map((c) => plane().cluster(c))));
    await Promise.all(NAMES.map((n) => startReplica(n)));
  });

  after(() => fleet.stop());

  test('each Runtime gets its RuntimeBootstrapper from the replica that works it: no replica races another', async () => {
    const conflictsBefore = await apiServerRequests(kcp(), 'POST', 'runtimebootstrappers', '409');
    const kim = kcpClients(kcp().kubeConfig());
    for (const id of ALL) await createRuntime(kim, id);
    await allReady();
    // Every replica created its share; none tried to create what another one had.
    assert.equal(await apiServerRequests(kcp(), 'POST', 'runtimebootstrappers', '201'), ALL.length);
    assert.equal(await apiServerRequests(kcp(), 'POST', 'runtimebootstrappers', '409'), conflictsBefore);
    const rbs = await listRuntimeBootstrappers(kcp());
    assert.deepEqual(rbs.map((rb) => rb.spec.runtimeID).sort(), [...ALL].sort());
  });

  test('a drift report relayed to the owner is counted in its rtb_drift_repair_seconds', async () => {
    const id = 'rt-3';
    // The runtime's domain, which its client certificate names and the listener pins.
    await kubeRequest(kcp().kubeConfig(), {
      method: 'PATCH',
      path: `${RB_PATH}/${id}`,
      body: { metadata: { annotations: { [SKR_DOMAIN_ANNOTATION]: `${id}.example.com` } } },
    });
    const owner = replica(lastWorker(id) ?? '');
    const other = [...replicas.values()].find((r) => r.name !== owner.name);
    assert.ok(other);
    const count = 'rtb_drift_repair_seconds_count';
    const before = await Promise.all(
      [owner, other].map((r) => sampleOf(r, 'rtb_drift_repair_seconds', count)),
    );
    const core = coreOf(plane().cluster('pool'));
    await core.deleteNamespacedSecret({ name: 'registry-credentials', namespace: RUNTIME_NAMESPACE });
    const reply = await reportPullSecretDriftTo(other.mode, id, `${id}.example.com`);
    assert.equal(reply.status, 202);
    await eventually(
      () => core.readNamespacedSecret({ name: 'registry-credentials', namespace: RUNTIME_NAMESPACE }),
      20_000,
      'the pull Secret restored',
    );
    // Counted once, by the replica that repaired it, not by the one that relayed it.
    await eventually(
      async () =>
        (await sampleOf(owner, 'rtb_drift_repair_seconds', count)) > (before[0] ?? 0) ? true : undefined,
      20_000,
      'the relayed repair measured by its owner',
    );
    assert.equal(await sampleOf(owner, 'rtb_drift_repair_seconds', count), (before[0] ?? 0) + 1);
    assert.equal(await sampleOf(other, 'rtb_drift_repair_seconds', count), before[1]);
  });

  test('two stores rotating one CA Secret at once: one rotation is written, the other store takes it', async () => {
    const core = kcp().kubeConfig().makeApiClient(CoreV1Api);
    const ref = { namespace: 'kcp-system', name: 'race-ca' };
    const [x, y] = [new CaStore(core, ref), new CaStore(core, ref)];
    await x.load();
    await y.load();
    const original = x.current().certPem;
    assert.equal(y.current().certPem, original);
    const outcomes = await Promise.all([x.rotate(3600_000), y.rotate(3600_000)]);
    assert.deepEqual([...outcomes].sort(), ['adopted', 'rotated']);
    const stored = await core.readNamespacedSecret(ref);
    const storedCa = Buffer.from(stored.data?.['tls.crt'] ?? '', 'base64').toString();
    assert.equal(x.current().certPem, storedCa);
    assert.equal(y.current().certPem, storedCa);
    assert.notEqual(storedCa, original);
    // The CA both signed with before stays trusted on both for the grace period.
    for (const s of [x, y]) assert.deepEqual(s.trusted(), [storedCa, original]);
  });

  test('a CA rotated by one replica is followed by all of them; a second rotation by two at once ends on one CA', async () => {
    const [a, b, c] = NAMES.map(replica);
    assert.ok(a && b && c);
    const original = a.mode.cas.current().certPem;
    for (const r of [b, c]) assert.equal(r.mode.cas.current().certPem, original);
    await a.mode.rotateCa(3600_000);
    const rotated = a.mode.cas.current().certPem;
    assert.notEqual(rotated, original);
    await eventually(
      () => ([b, c].every((r) => r.mode.cas.current().certPem === rotated) ? true : undefined),
      20_000,
      'replicas b and c to sign with the rotated CA',
    );
    // b's drift listener trusts the new CA: a report signed by it is accepted there.
    await eventually(
      async () => {
        const reply = await reportPullSecretDrift({
          port: b.driftPort,
          caPem: rotated,
          issuer: a.mode.cas.current(),
          runtimeId: 'rt-3',
          domain: 'rt-3.example.com',
        }).catch(() => undefined);
        return reply?.status === 202 ? true : undefined;
      },
      20_000,
      "b's listener to accept a certificate of the rotated CA",
    );
    // Two replicas rotate at once: one writes, the other takes its CA; all three end on it.
    await Promise.all([b.mode.rotateCa(3600_000), c.mode.rotateCa(3600_000)]);
    const secret = await coreOf(kcp()).readNamespacedSecret({
      namespace: 'kcp-system',
      name: 'rt-bootstrapper-ca',
    });
    const stored = Buffer.from(secret.data?.['tls.crt'] ?? '', 'base64').toString();
    const previous = Buffer.from(secret.data?.['previous.crt'] ?? '', 'base64').toString();
    assert.notEqual(stored, rotated);
    assert.equal(previous, rotated, 'the CA every replica signed with before stays trusted');
    await eventually(
      () => ([a, b, c].every((r) => r.mode.cas.current().certPem === stored) ? true : undefined),
      20_000,
      'all three replicas on the CA stored',
    );
    await allReady();
  });

  test('a replica partitioned from the KCP in the middle of a reconcile writes nothing more to the runtime', async () => {
    await allReady();
    const x = replica(lastWorker(SOLO) ?? '');
    const fenced = () => sampleOf(x, 'rtb_shard_fenced_passes_total');
    const fencedBefore = await fenced();
    // Lines of earlier tests do not count (under load a Lease renewal can come late there too).
    const linesBefore = x.logs.lines().length;
    await eventually(
      () => (inFlight(x.name, SOLO) === 0 ? true : undefined),
      30_000,
      `${x.name} between passes on ${SOLO}`,
    );
    // The runtime's answers are held back, and x starts a forced pass: it sends a request and waits.
    soloValve.hold();
    assert.equal(x.mode.resync(SOLO), true);
    await eventually(
      () => (inFlight(x.name, SOLO) > 0 && soloValve.heldAnswers() > 0 ? true : undefined),
      30_000,
      `${x.name} waiting for an answer of ${SOLO}`,
    );
    // Then x loses the KCP, so its Lease: another replica takes the runtime over meanwhile.
    x.valve.cut();
    const mark = work.length;
    const next = await eventually(
      () => work.slice(mark).find((w) => w.replica !== x.name && w.runtimeId === SOLO)?.replica,
      60_000,
      `another replica to take ${SOLO} over`,
    );
    assert.notEqual(next, x.name);
    // x wakes up: its pass goes on with a Lease that expired, and must not write.
    soloValve.release();
    await eventually(
      () => (inFlight(x.name, SOLO) === 0 ? true : undefined),
      60_000,
      `${x.name}'s pass on ${SOLO} to end`,
    );
    // Counted (passes x had in flight on other runtimes when it was cut may count too).
    assert.ok((await fenced()) > fencedBefore, `${x.name}'s pass stopped by its fence`);
    const stopped = x.logs
      .lines()
      .slice(linesBefore)
      .filter(
        (l) => l.runtimeBootstrapper === `kcp-system/${SOLO}` && String(l.msg).includes('no longer held'),
      );
    assert.equal(stopped.length, 1, JSON.stringify(stopped));
    // The pass went on to a write, which was refused rather than sent.
    assert.equal(typeof stopped[0]?.refused, 'string', JSON.stringify(stopped[0]));
    // The new owner finishes the runtime; x is back on the KCP and works again.
    x.valve.restore();
    await allReady();
  });
});
