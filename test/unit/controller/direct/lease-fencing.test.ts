import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type https from 'node:https';
import type { AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { RuntimeInstaller } from '../../../../src/controller/direct/runtime-installer.js';
import { RepairLatency } from '../../../../src/controller/direct/repair-latency.js';
import type { ClusterAccess } from '../../../../src/kube/cluster-access.js';
import { LeaderElectionConfigError } from '../../../../src/kube/leader-election-timing.js';
import { leaseHeld, type HeldLease } from '../../../../src/kube/lease-decision.js';
import { assertFenced, LeaseLostError, UNFENCED } from '../../../../src/kube/lease-fence.js';
import { ShardMembership } from '../../../../src/kube/shard-membership.js';
import { silentLogger } from '../../../../src/telemetry/logger.js';

/** client-go's timing: 15 s lease, 10 s renew deadline; last renewal sent at 1,000. */
const held = (over: Partial<HeldLease>): boolean =>
  leaseHeld({
    renewedAtMs: 1_000,
    nowMs: 1_000,
    renewDeadlineMs: 10_000,
    leaseDurationMs: 15_000,
    marginMs: 2_000,
    ...over,
  });

describe('whether a replica still holds its Lease (by its own clock)', () => {
  test('held from the renewal until the renew deadline', () => {
    assert.equal(held({}), true);
    assert.equal(held({ nowMs: 10_999 }), true);
    assert.equal(held({ nowMs: 11_000 }), false);
    // After a long pause (a GC, a partition) the last renewal is far behind.
    assert.equal(held({ nowMs: 60_000 }), false);
  });

  test('the margin shortens the window when the deadline leaves less of the lease duration', () => {
    // Lease 4 s, deadline 3 s: a margin of 2 s leaves 2 s, not 3.
    const tight = { renewDeadlineMs: 3_000, leaseDurationMs: 4_000 };
    assert.equal(held({ ...tight, nowMs: 2_999 }), true);
    assert.equal(held({ ...tight, nowMs: 3_000 }), false);
    assert.equal(held({ ...tight, marginMs: 0, nowMs: 3_999 }), true);
    // A margin as long as the lease: nothing may be written.
    assert.equal(held({ ...tight, marginMs: 4_000 }), false);
  });

  test('a shard member refuses a fence margin that would leave no time to write', () => {
    const member = (fenceMarginMs: number) =>
      new ShardMembership({
        access: {
          getCurrentCluster: () => ({ server: 'https://127.0.0.1:1' }),
          applyToHTTPSOptions: () => Promise.resolve(),
        },
        namespace: 'kcp-system',
        identity: 'replica-a',
        label: { key: 'shard-of', value: 'test' },
        namePrefix: 'shard-',
        timing: { leaseDurationMs: 4_000, renewDeadlineMs: 3_000, retryPeriodMs: 500 },
        fenceMarginMs,
        logger: silentLogger(),
        drain: () => Promise.resolve(),
        onChange: () => undefined,
      });
    assert.throws(() => member(3_500), LeaderElectionConfigError);
    assert.doesNotThrow(() => member(2_000));
  });
});

/** A cluster access that records every request it is asked to prepare (none reach a server). */
function recordingAccess(): { access: ClusterAccess; requests: number } {
  const seen = { requests: 0 };
  const access: ClusterAccess = {
    getCurrentCluster: () => ({ server: 'https://127.0.0.1:1' }),
    applyToHTTPSOptions: (_opts: https.RequestOptions) => {
      seen.requests++;
      return Promise.reject(new Error('no server in this test'));
    },
  };
  return {
    access,
    get requests() {
      return seen.requests;
    },
  };
}

describe('runtime writes fenced by the Lease', () => {
  test('a fence that no longer holds stops every write before a request is made', async () => {
    const rec = recordingAccess();
    let holds = false;
    const installer = new RuntimeInstaller(rec.access, 1_000, () => holds);
    const cm = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', namespace: 'kyma-system' } };
    await assert.rejects(installer.apply([cm]), LeaseLostError);
    await assert.rejects(
      installer.writeServingSecret('kyma-system', undefined, { tlsCrt: 'C', tlsKey: 'K', caCrt: 'CA' }),
      LeaseLostError,
    );
    await assert.rejects(
      installer.uninstall({
        registration: [cm],
        webhook: [],
        manifests: { namespace: { metadata: { name: 'kyma-system' } } },
      } as never),
      LeaseLostError,
    );
    assert.equal(rec.requests, 0);
    // Reads are not fenced, and a fence that holds lets writes through.
    holds = true;
    await assert.rejects(installer.apply([cm]), (e: unknown) => !(e instanceof LeaseLostError));
    assert.equal(rec.requests, 1);
  });

  test('the fence is checked before each object, not once per batch', async () => {
    // A sink that answers every request (the writes' answers are not read).
    let received = 0;
    const sink = createServer((req, res) => {
      received++;
      req.resume();
      res.writeHead(200, { 'Content-Type': 'application/json' }).end('{}');
    });
    await new Promise<void>((resolve) => sink.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = sink.address() as AddressInfo;
      const access: ClusterAccess = {
        getCurrentCluster: () => ({ server: `http://127.0.0.1:${port}` }),
        applyToHTTPSOptions: () => Promise.resolve(),
      };
      let checks = 0;
      // Held for the first write only: the Lease is lost while the batch is written.
      const installer = new RuntimeInstaller(access, 5_000, () => ++checks === 1);
      const objects = ['a', 'b'].map((name) => ({
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name, namespace: 'kyma-system' },
      }));
      await assert.rejects(installer.apply(objects), LeaseLostError);
      assert.equal(received, 1);
      assert.equal(checks, 2);
    } finally {
      await new Promise<void>((resolve) => {
        sink.close(() => {
          resolve();
        });
      });
    }
  });

  test('assertFenced names what it refused; the unfenced fence always holds', () => {
    assert.throws(() => {
      assertFenced(() => false, 'apply');
    }, /not written \(apply\)/);
    assert.doesNotThrow(() => {
      assertFenced(UNFENCED, 'apply');
    });
  });
});

describe('drift repair latency', () => {
  const observed = async (registry: Registry): Promise<{ count: number; sum: number }> => {
    const values = (await registry.getSingleMetric('rtb_drift_repair_seconds')?.get())?.values ?? [];
    const pick = (name: string) =>
      values.find((v) => (v as { metricName?: string }).metricName === name)?.value ?? 0;
    return { count: pick('rtb_drift_repair_seconds_count'), sum: pick('rtb_drift_repair_seconds_sum') };
  };

  test('measured from the time the first report was received, wherever it was received', async () => {
    const registry = new Registry();
    let now = 10_000;
    const latency = new RepairLatency(registry, () => now);
    // Relayed: received by another replica at 7,500.
    latency.reported('kcp-system/rt-1', 7_500);
    latency.reported('kcp-system/rt-1', 9_000);
    // A failed pass closes nothing.
    latency.repaired('kcp-system/rt-1', false);
    assert.equal((await observed(registry)).count, 0);
    latency.repaired('kcp-system/rt-1', true);
    assert.deepEqual(await observed(registry), { count: 1, sum: 2.5 });
    // Nothing pending: a reconcile observes nothing.
    latency.repaired('kcp-system/rt-1', true);
    assert.equal((await observed(registry)).count, 1);
    // A report stamped by a clock ahead of ours counts as repaired at once, never negative.
    latency.reported('kcp-system/rt-2', now + 5_000);
    now += 1;
    latency.repaired('kcp-system/rt-2', true);
    assert.deepEqual(await observed(registry), { count: 2, sum: 2.5 });
  });
});
