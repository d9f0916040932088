/**
 * Direct mode across three replicas (in-process instances with identities of their own) on a KCP
 * with 30 runtimes sharing three real API servers: every runtime is worked by its owner only,
 * a crashed replica's runtimes move to the others once its Lease expired, a graceful stop hands
 * them over at once, and a drift report reaching the wrong replica is relayed to the owner.
 * Each replica records when it works which runtime (ShardedWork's `onWork` hook: the span of
 * every reconcile and repair); the audit at the end asserts no two replicas' spans of one runtime
 * ever overlapped.
 */
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import { startDirectMode } from '../../src/controller/direct/direct-mode.js';
import type { DirectMode } from '../../src/controller/direct/direct-mode-options.js';
import { DRIFT_REPORTED_ANNOTATION } from '../../src/controller/direct/drift-relay.js';
import { SHARD_LEASE_LABEL } from '../../src/controller/direct/sharded-work.js';
import { freePort } from '../../src/envtest/free-port.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import type { LeaderElectionTiming } from '../../src/kube/leader-election-timing.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { useControlPlane } from '../support/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { reportPullSecretDriftTo } from '../support/drift-report.js';
import { DirectFleet } from '../support/direct-fleet.js';
import { driftListenerOptions } from '../support/drift-listener-options.js';
import {
  coreOf,
  directModeOptions,
  putPullSecret,
  allBootstrappersReady,
  keepDeploymentsAvailable,
} from '../support/kcp.js';

const POOL = ['pool-1', 'pool-2', 'pool-3'] as const;
const IDS = Array.from({ length: 30 }, (_, i) => `rt-${String(i + 1).padStart(2, '0')}`);
const plane = useControlPlane({ clusters: ['kcp', ...POOL] });
const kcp = () => plane().cluster('kcp');
const poolOf = (id: string) => plane().cluster(POOL[IDS.indexOf(id) % POOL.length] ?? 'pool-1');
const domain = (id: string) => `${id}.example.com`;
/** Short Leases, so a crash moves runtimes within seconds. */
const TIMING: LeaderElectionTiming = { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 };

/** A span in which a replica worked a runtime (`end` undefined: still working). */
interface Span {
  readonly replica: string;
  readonly runtimeId: string;
  readonly start: number;
  end?: number;
}
const spans: Span[] = [];

interface Replica {
  readonly name: string;
  readonly mode: DirectMode;
  readonly registry: Registry;
  readonly driftPort: number;
}
const replicas = new Map<string, Replica>();
const fleet = new DirectFleet(kcp);

async function startReplica(name: string, timing: LeaderElectionTiming = TIMING): Promise<Replica> {
  const registry = new Registry();
  const driftPort = await freePort();
  const open = new Map<string, Span[]>();
  const mode = await startDirectMode(
    directModeOptions(kcp(), fleet.sources, silentLogger(), {
      registry,
      // One URL for every replica: what runtimes are told must not depend on who wrote it.
      ...driftListenerOptions(driftPort, { listenerUrl: 'https://127.0.0.1:1' }),
      shard: {
        identity: name,
        timing,
        onWork: (runtimeId, phase) => {
          // A reconcile and a drift repair of one runtime may overlap within a replica.
          const mine = open.get(runtimeId) ?? [];
          if (phase === 'start') {
            const span: Span = { replica: name, runtimeId, start: performance.now() };
            spans.push(span);
            open.set(runtimeId, [...mine, span]);
          } else {
            const [first, ...rest] = mine;
            if (first) first.end = performance.now();
            open.set(runtimeId, rest);
          }
        },
      },
    }),
  );
  const replica = { name, mode, registry, driftPort };
  replicas.set(name, replica);
  return replica;
}

async function gauge(r: Replica, name: string): Promise<number> {
  const metric = await r.registry.getSingleMetric(name)?.get();
  return metric?.values[0]?.value ?? 0;
}

/**
 * Waits until every replica left sees two members. A level, not a sample: with Leases of 4 s, a
 * renewal late on a loaded machine makes a replica work none for a moment (its gauge 0). 20 s is
 * well below the 60 s Lease of the replica stopped gracefully, so an unreleased one still fails.
 */
async function twoMembersSeen(): Promise<void> {
  for (const r of replicas.values())
    await eventually(
      async () => ((await gauge(r, 'rtb_shard_members')) === 2 ? true : undefined),
      20_000,
      `${r.name} to see two members`,
    );
}

/** Waits until every RuntimeBootstrapper is Ready with one applied version other than `not`; returns it. */
const allReady = (not?: string, timeoutMs?: number): Promise<string> =>
  allBootstrappersReady(kcp(), IDS.length, not, timeoutMs);

/** The replica that worked `id` last. */
const lastWorker = (id: string): string | undefined =>
  spans.filter((s) => s.runtimeId === id).at(-1)?.replica;

describe('direct mode sharded across replicas', () => {
  before(async () => {
    await fleet.prepare(Object.fromEntries(IDS.map((id) => [id, poolOf(id)])));
    fleet.onStop(async () => {
      for (const r of replicas.values()) await r.mode.stop();
    });
    // No kubelet: the webhook Deployment of each pool server is reported available whenever it exists.
    fleet.onStop(keepDeploymentsAvailable(() => POOL.map((c) => plane().cluster(c))));
    await Promise.all(['replica-a', 'replica-b', 'replica-c'].map((n) => startReplica(n)));
    for (const id of IDS) await fleet.create(id, { 'skr-domain': domain(id) });
  });

  after(() => fleet.stop());

  test('three replicas share the 30 runtimes: every one becomes Ready, each replica works a part', async () => {
    await allReady();
    const [a, b, c] = ['replica-a', 'replica-b', 'replica-c'].map((n) => replicas.get(n));
    assert.ok(a && b && c);
    await eventually(
      async () => ((await gauge(a, 'rtb_shard_members')) === 3 ? true : undefined),
      20_000,
      '3 members',
    );
    // Settled: every runtime worked by exactly one replica (a runtime being handed over counts nowhere).
    const owned = await eventually(
      async () => {
        const counts = await Promise.all([a, b, c].map((r) => gauge(r, 'rtb_shard_owned_runtimes')));
        return counts.reduce((x, y) => x + y, 0) === IDS.length ? counts : undefined;
      },
      20_000,
      'every runtime owned once',
    );
    for (const n of owned) assert.ok(n > 0, `owned: ${owned.join(', ')}`);
    const leases = await kubeRequest<{ items: unknown[] }>(kcp().kubeConfig(), {
      method: 'GET',
      path: '/apis/coordination.k8s.io/v1/namespaces/kcp-system/leases',
      query: { labelSelector: `${SHARD_LEASE_LABEL.key}=${SHARD_LEASE_LABEL.value}` },
    });
    assert.equal(leases.items.length, 3);
  });

  test('a drift report reaching a replica that does not work the runtime is relayed to the one that does', async () => {
    const id = 'rt-07';
    const owner = lastWorker(id);
    const other = [...replicas.values()].find((r) => r.name !== owner);
    assert.ok(owner !== undefined && other !== undefined);
    const core = coreOf(poolOf(id));
    await core.deleteNamespacedSecret({ name: 'registry-credentials', namespace: RUNTIME_NAMESPACE });
    const before = spans.length;
    const reply = await reportPullSecretDriftTo(other.mode, id, domain(id));
    assert.equal(reply.status, 202);
    await eventually(
      () => core.readNamespacedSecret({ name: 'registry-credentials', namespace: RUNTIME_NAMESPACE }),
      20_000,
      'the pull Secret restored',
    );
    const rb = await fleet.readRb(id);
    assert.ok(rb.metadata.annotations?.[DRIFT_REPORTED_ANNOTATION], 'the report was relayed through the KCP');
    const repairers = new Set(
      spans
        .slice(before)
        .filter((s) => s.runtimeId === id)
        .map((s) => s.replica),
    );
    assert.deepEqual([...repairers], [owner]);
  });

  test('a crashed replica (Lease not released) leaves its runtimes to the other two, and a change reaches all', async () => {
    const version = await allReady();
    const crashed = replicas.get('replica-c');
    assert.ok(crashed);
    const itsRuntimes = IDS.filter((id) => lastWorker(id) === 'replica-c');
    assert.ok(itsRuntimes.length > 0);
    // It crashes while a change is being written (what it has in flight finishes first).
    await putPullSecret(kcp(), 'after-crash');
    await crashed.mode.stop({ releaseShard: false });
    replicas.delete('replica-c');
    const crashedAt = performance.now();
    const v1 = await allReady(version);
    await putPullSecret(kcp(), 'after-crash-2');
    await allReady(v1);
    for (const id of itsRuntimes) {
      const worker = lastWorker(id);
      assert.ok(worker === 'replica-a' || worker === 'replica-b', `${id} last worked by ${String(worker)}`);
    }
    await twoMembersSeen();
    assert.ok(spans.every((s) => s.replica !== 'replica-c' || (s.end ?? Infinity) <= crashedAt));
  });

  test('a graceful stop releases the Lease: the runtimes move at once, not after it would expire', async () => {
    // A Lease of 60 s: if it were not released, its runtimes would wait a minute for the others.
    const slow = { leaseDurationMs: 60_000, renewDeadlineMs: 40_000, retryPeriodMs: 500 };
    // It joins while a change is being written: runtimes in flight on the others move to it.
    const before = await allReady();
    await putPullSecret(kcp(), 'while-joining');
    const joiner = await startReplica('replica-d', slow);
    await eventually(
      async () => ((await gauge(joiner, 'rtb_shard_owned_runtimes')) > 0 ? true : undefined),
      30_000,
      'replica-d to own runtimes',
    );
    const version = await allReady(before);
    await joiner.mode.stop();
    replicas.delete('replica-d');
    await putPullSecret(kcp(), 'after-graceful-stop');
    await allReady(version, 30_000);
    await twoMembersSeen();
  });

  test('the Leases of replicas gone (crashed or stopped) are deleted by the ones alive', async () => {
    await eventually(
      async () => {
        const leases = await kubeRequest<{ items: { spec?: { holderIdentity?: string } }[] }>(
          kcp().kubeConfig(),
          {
            method: 'GET',
            path: '/apis/coordination.k8s.io/v1/namespaces/kcp-system/leases',
            query: { labelSelector: `${SHARD_LEASE_LABEL.key}=${SHARD_LEASE_LABEL.value}` },
          },
        );
        const holders = leases.items.map((l) => l.spec?.holderIdentity).sort();
        return holders.join(',') === 'replica-a,replica-b' ? true : undefined;
      },
      60_000,
      'only the Leases of replica-a and replica-b left',
    );
  });

  test('audit: no runtime was ever worked by two replicas at once', () => {
    const byRuntime = new Map<string, Span[]>();
    for (const s of spans) byRuntime.set(s.runtimeId, [...(byRuntime.get(s.runtimeId) ?? []), s]);
    assert.equal(byRuntime.size, IDS.length);
    for (const [id, list] of byRuntime) {
      const sorted = [...list].sort((x, y) => x.start - y.start);
      let open: Span | undefined;
      for (const s of sorted) {
        if (open && open.replica !== s.replica && (open.end ?? Infinity) > s.start)
          assert.fail(
            `${id}: ${open.replica} [${open.start}, ${String(open.end)}] overlaps ${s.replica} at ${s.start}`,
          );
        if (!open || (s.end ?? Infinity) > (open.end ?? Infinity)) open = s;
      }
    }
    assert.ok(new Set(spans.map((s) => s.replica)).size >= 3);
  });
});
