import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { connect as netConnect, type Socket } from 'node:net';
import { after, before, describe, test } from 'node:test';
import {
  FORCE_RELEASE_ANNOTATION,
  type Condition,
  type RuntimeBootstrapper,
} from '../../src/api/runtime-bootstrapper.js';
import { RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT } from '../../src/api/runtime-names.js';
import { TRUST_STATUS_ANNOTATION } from '../../src/api/trust-stamp.js';
import { REPORT_MAX_BYTES, WEBHOOK_STATUS_CONFIG_MAP } from '../../src/api/webhook-status.js';
import { RUNTIME_ANSWER_MAX_BYTES } from '../../src/controller/direct/runtime-clients.js';
import { eventually } from '../../src/envtest/eventually.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { useControlPlane } from '../support/control-plane.js';
import { spawnDirectController } from '../support/direct-controller-process.js';
import { putTrustBundle, readTrustBundle } from '../support/trust-bundles.js';
import { reportPullSecretDriftTo } from '../support/drift-report.js';
import { startHostileRuntime, FLOOD_BYTES, type HostileRuntime } from '../support/hostile-runtime.js';
import { DirectFleet } from '../support/direct-fleet.js';
import {
  CTB_NAME,
  KCP_PULL_SECRET,
  RB_PATH,
  coreOf,
  createRuntimeBootstrapper,
  keepDeploymentsAvailable,
  putKubeconfigSecret,
  putPullSecret,
} from '../support/kcp.js';

const plane = useControlPlane({ clusters: ['kcp', 'rt-good'] });
const kcp = () => plane().cluster('kcp');
const good = () => plane().cluster('rt-good');
const TIMEOUT_MS = 3_000;
const DEADLINE_MS = 4_000;
const domain = (id: string): string => `${id}.example.com`;
const MAX_PENDING_HANDSHAKES = 32;
const HANDSHAKE_TIMEOUT_MS = 3_000;
const fleet = new DirectFleet(kcp);
const { readRb } = fleet;
const reachable = (rb: RuntimeBootstrapper): Condition | undefined =>
  rb.status?.conditions?.find((c) => c.type === 'RuntimeReachable');

async function pullSecretAuth(): Promise<string | undefined> {
  const s = await coreOf(good()).readNamespacedSecret({
    name: KCP_PULL_SECRET,
    namespace: RUNTIME_NAMESPACE,
  });
  const json = JSON.parse(Buffer.from(s.data?.['.dockerconfigjson'] ?? '', 'base64').toString()) as {
    auths: Record<string, { auth: string }>;
  };
  return json.auths['ghcr.io']?.auth;
}

/** Until the RuntimeBootstrapper's RuntimeReachable is False with `reason`; resolves it and when. */
const refusedWith = (id: string, reason: string, timeoutMs: number): Promise<RuntimeBootstrapper> =>
  fleet.waitCondition(id, 'RuntimeReachable', { status: 'False', reason }, timeoutMs);

describe("the KCP's trust boundary: hostile runtimes cost the others nothing", () => {
  let flood: HostileRuntime;
  let drip: HostileRuntime;

  before(async () => {
    await fleet.prepare({ 'rt-good': good() });
    flood = await startHostileRuntime('flood');
    fleet.onStop(() => flood.stop());
    drip = await startHostileRuntime('drip');
    fleet.onStop(() => drip.stop());
    await putKubeconfigSecret(kcp(), 'rt-flood', flood.kubeconfig);
    await putKubeconfigSecret(kcp(), 'rt-drip', drip.kubeconfig);
    await fleet.start({
      runtimeTimeoutMs: TIMEOUT_MS,
      runtimeDeadlineMs: DEADLINE_MS,
      withDriftListener: {
        maxPendingHandshakes: MAX_PENDING_HANDSHAKES,
        handshakeTimeoutMs: HANDSHAKE_TIMEOUT_MS,
      },
    });
    fleet.onStop(keepDeploymentsAvailable(() => [good()]));
    await fleet.create('rt-good', { 'skr-domain': domain('rt-good') });
    await fleet.waitState('rt-good', 'Ready', 60_000);
  });
  after(() => fleet.stop());

  test('a runtime answering 50 MB of JSON: RuntimeReachable False AnswerTooLarge, the cap named; memory stays bounded', async (t) => {
    const base = process.memoryUsage();
    let peakHeap = base.heapUsed;
    let peakExternal = base.external + base.arrayBuffers;
    const sampler = setInterval(() => {
      const m = process.memoryUsage();
      peakHeap = Math.max(peakHeap, m.heapUsed);
      peakExternal = Math.max(peakExternal, m.external + m.arrayBuffers);
    }, 10);
    try {
      await createRuntimeBootstrapper(kcp(), 'rt-flood', { 'skr-domain': domain('rt-flood') });
      const rb = await refusedWith('rt-flood', 'AnswerTooLarge', 30_000);
      assert.equal(rb.status?.state, 'Error');
      assert.match(
        reachable(rb)?.message ?? '',
        new RegExp(
          `answered too much: GET /\\S+: the answer exceeds the cap of ${RUNTIME_ANSWER_MAX_BYTES} bytes`,
        ),
      );
      // A few more passes (the backoff retries it).
      await eventually(() => (flood.requests() >= 3 ? true : undefined), 30_000, 'three calls to the flood');
    } finally {
      clearInterval(sampler);
    }
    // The answer was cut: the server could not send its 50 MB (socket buffers carry a few MB more).
    assert.ok(
      flood.maxSentPerRequest() < FLOOD_BYTES / 4,
      `the flood sent ${flood.maxSentPerRequest()} bytes to one call`,
    );
    const heapMb = (peakHeap - base.heapUsed) / 2 ** 20;
    const externalMb = (peakExternal - base.external - base.arrayBuffers) / 2 ** 20;
    t.diagnostic(
      `sent to one call: ${flood.maxSentPerRequest()} bytes; heap +${heapMb.toFixed(0)} MB, buffers +${externalMb.toFixed(0)} MB`,
    );
    assert.ok(heapMb < 100, `the heap grew by ${heapMb.toFixed(0)} MB`);
    assert.ok(externalMb < 50, `buffers grew by ${externalMb.toFixed(0)} MB`);
  });

  test('a runtime dripping a byte a second: a status within the deadline, deletion within a bound; rt-good is served meanwhile', async (t) => {
    const started = Date.now();
    await createRuntimeBootstrapper(kcp(), 'rt-drip', { 'skr-domain': domain('rt-drip') });
    const refused = await refusedWith('rt-drip', 'DeadlineExceeded', 30_000);
    const statusAfter = Date.now() - started;
    assert.match(reachable(refused)?.message ?? '', /too slow: GET \/\S+: no complete answer within 4000 ms/);
    // The deadline, the status write and a little: one call's deadline ends the pass.
    assert.ok(statusAfter < DEADLINE_MS + 4_000, `status after ${statusAfter} ms`);

    t.diagnostic(`rt-drip: status after ${statusAfter} ms`);
    // rt-good meanwhile: a rotation reaches it, and a drift repair restores its pull Secret.
    await putPullSecret(kcp(), 'rotated-while-hostile');
    await eventually(
      async () => ((await pullSecretAuth()) === 'rotated-while-hostile' ? true : undefined),
      15_000,
      'the rotation on rt-good while rt-drip and rt-flood hang',
    );
    await coreOf(good()).deleteNamespacedSecret({ name: KCP_PULL_SECRET, namespace: RUNTIME_NAMESPACE });
    const reply = await reportPullSecretDriftTo(fleet.direct, 'rt-good', domain('rt-good'));
    assert.equal(reply.status, 202);
    await eventually(
      async () => ((await pullSecretAuth()) === 'rotated-while-hostile' ? true : undefined),
      10_000,
      'rt-good repaired',
    );

    // Deleting rt-drip: the removal meets the deadline and says so; the force release then frees it.
    const deleting = Date.now();
    await kubeRequest(kcp().kubeConfig(), { method: 'DELETE', path: `${RB_PATH}/rt-drip` });
    const stuck = await eventually(
      async () => {
        const rb = await readRb('rt-drip');
        return rb.status?.state === 'Deleting' && /the finalizer stays/.test(reachable(rb)?.message ?? '')
          ? rb
          : undefined;
      },
      2 * DEADLINE_MS + 10_000,
      'rt-drip: the removal refused, the status saying so',
    );
    const stuckAfter = Date.now() - deleting;
    assert.equal(reachable(stuck)?.reason, 'DeadlineExceeded');
    assert.ok(stuckAfter < 2 * DEADLINE_MS + 10_000);
    const releasing = Date.now();
    await kubeRequest(kcp().kubeConfig(), {
      method: 'PATCH',
      path: `${RB_PATH}/rt-drip`,
      body: { metadata: { annotations: { [FORCE_RELEASE_ANNOTATION]: 'true' } } },
    });
    await eventually(
      async () => {
        try {
          await readRb('rt-drip');
          return undefined;
        } catch {
          return true;
        }
      },
      DEADLINE_MS + 10_000,
      'rt-drip gone after the force release',
    );
    const releasedAfter = Date.now() - releasing;
    t.diagnostic(
      `rt-drip: removal refused after ${stuckAfter} ms, released ${releasedAfter} ms after the annotation`,
    );
    assert.ok(releasedAfter < DEADLINE_MS + 10_000);
  });

  test("a runtime admin's report: one too large is refused before parsing, a count past the CRD's integers left out; the status write succeeds", async () => {
    const kc = good().kubeConfig();
    const statusPath = `/api/v1/namespaces/${RUNTIME_NAMESPACE}/configmaps/${WEBHOOK_STATUS_CONFIG_MAP}`;
    const trustCount = (stalePods: string) =>
      kubeRequest(kc, {
        method: 'PATCH',
        path: `/apis/apps/v1/namespaces/${RUNTIME_NAMESPACE}/deployments/${WEBHOOK_DEPLOYMENT}`,
        contentType: 'application/merge-patch+json',
        body: {
          metadata: {
            annotations: {
              [TRUST_STATUS_ANNOTATION]: `{"bundle":"abcdef012345","stalePods":${stalePods},"at":"${new Date().toISOString()}"}`,
            },
          },
        },
      });
    // A count the restarter could write, read by a forced pass (it reads the Deployment).
    await trustCount('3');
    fleet.direct.periodicResync();
    await eventually(
      async () => ((await readRb('rt-good')).status?.trustRestart?.stalePods === 3 ? true : undefined),
      20_000,
      'rt-good: the count in the status',
    );
    // What the runtime's admin can write: the status ConfigMap with more than the KCP reads, and
    // the count as an integer no 64-bit field holds (the API server refuses it in the status).
    await kubeRequest(kc, {
      method: 'POST',
      path: `/api/v1/namespaces/${RUNTIME_NAMESPACE}/configmaps`,
      body: {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: WEBHOOK_STATUS_CONFIG_MAP },
        data: { loadedVersion: 'forged', workloads: `[${'1,'.repeat(REPORT_MAX_BYTES / 2)}1]` },
      },
    });
    await trustCount('1e20');
    // A forced pass reads both (the Deployment's readiness, the report for the projection); only
    // its own status write can clear the count.
    fleet.direct.periodicResync();
    const rb = await eventually(
      async () => {
        const r = await readRb('rt-good');
        return r.status?.conditions?.some((c) => c.type === 'WebhookReport') ? r : undefined;
      },
      20_000,
      'rt-good: condition WebhookReport',
    );
    const c = rb.status?.conditions?.find((x) => x.type === 'WebhookReport');
    assert.ok(c);
    assert.equal(c.status, 'False');
    assert.equal(c.reason, 'TooLarge');
    assert.match(c.message, new RegExp(`more than the ${REPORT_MAX_BYTES} the KCP reads`));
    assert.equal(rb.status?.state, 'Ready', 'the runtime is served as ever');
    assert.equal(
      rb.status.trustRestart,
      undefined,
      'the count past the CRD left out by the pass that read it',
    );

    // Back to a report within bounds: the next forced pass reads it and the condition goes.
    await kubeRequest(kc, { method: 'DELETE', path: statusPath });
    await trustCount('0');
    fleet.direct.periodicResync();
    await eventually(
      async () => {
        const r = await readRb('rt-good');
        return r.status?.conditions?.some((x) => x.type === 'WebhookReport') ? undefined : true;
      },
      20_000,
      'rt-good: condition WebhookReport gone',
    );
  });

  test("idle TCP connections and slow handshakes on the drift listener: the oldest closed past the bound, the rest at the timeout; a runtime's mTLS report is accepted meanwhile", async (t) => {
    const port = fleet.direct.driftPort ?? 0;
    const refused = async (reason: string): Promise<number> =>
      (
        await fleet.registry.getSingleMetric('rtb_drift_listener_handshakes_refused_total')?.get()
      )?.values.find((v) => v.labels.reason === reason)?.value ?? 0;
    const limitBefore = await refused('limit');
    let closed = 0;
    const opened: Socket[] = [];
    const connectIdle = (): Promise<Socket> =>
      new Promise((resolve) => {
        const s = netConnect(port, '127.0.0.1', () => {
          resolve(s);
        });
        s.on('error', () => undefined);
        s.on('close', () => closed++);
        opened.push(s);
      });
    const idleCount = 6 * MAX_PENDING_HANDSHAKES;
    // Slow handshakes: a TLS record header announcing 512 bytes, then a byte now and then.
    const slow = await Promise.all(Array.from({ length: 8 }, connectIdle));
    for (const s of slow) s.write(Buffer.from([0x16, 0x03, 0x01, 0x02, 0x00]));
    const drip = setInterval(() => {
      for (const s of slow) if (!s.destroyed) s.write(Buffer.from([0x01]));
    }, 200);
    try {
      await Promise.all(Array.from({ length: idleCount }, connectIdle));
      const total = idleCount + slow.length;
      // Past the bound, closed at once: far sooner than the handshake timeout.
      await eventually(
        () => (closed >= total - MAX_PENDING_HANDSHAKES ? true : undefined),
        HANDSHAKE_TIMEOUT_MS / 2,
        `${total - MAX_PENDING_HANDSHAKES} connections closed past the bound`,
      );
      assert.ok((await refused('limit')) - limitBefore >= total - MAX_PENDING_HANDSHAKES);
      // The bound is full of idle connections: a runtime's report (a full mutual-TLS handshake)
      // still gets through, and the tampering it reports is repaired.
      await coreOf(good()).deleteNamespacedSecret({ name: KCP_PULL_SECRET, namespace: RUNTIME_NAMESPACE });
      const reply = await reportPullSecretDriftTo(fleet.direct, 'rt-good', domain('rt-good'));
      assert.equal(reply.status, 202);
      await eventually(
        async () => ((await pullSecretAuth()) === undefined ? undefined : true),
        10_000,
        'rt-good repaired',
      );
      // What is left of them is closed at the handshake timeout.
      await eventually(
        () => (closed === opened.length ? true : undefined),
        3 * HANDSHAKE_TIMEOUT_MS,
        'all closed',
      );
      assert.ok((await refused('timeout')) > 0);
      t.diagnostic(`closed ${closed} connections: ${(await refused('limit')) - limitBefore} past the bound`);
    } finally {
      clearInterval(drip);
      for (const s of opened) s.destroy();
    }
  });

  test("the KCP's trust bundle with junk after its certificate: refused, spec.trustBundle named; the runtime keeps the last good one", async () => {
    const kcpKc = kcp().kubeConfig();
    const lastGood = (await readTrustBundle(kcpKc, CTB_NAME))?.spec.trustBundle ?? '';
    assert.match(lastGood, /BEGIN CERTIFICATE/);
    const onRuntime = async (): Promise<string | undefined> =>
      (await readTrustBundle(good().kubeConfig(), CTB_NAME))?.spec.trustBundle;
    assert.equal(await onRuntime(), lastGood);
    // The API server skips what does not decode and stores it; the lazy pattern skipped it too and
    // passed the junk on to every runtime.
    await putTrustBundle(kcpKc, CTB_NAME, {
      trustBundle: `${lastGood}${'-----BEGIN CERTIFICATE-----\n'.repeat(4_000)}`,
    });
    const rb = await eventually(
      async () => {
        const r = await readRb('rt-good');
        const c = r.status?.conditions?.find((x) => x.type === 'ConfigurationSynced');
        return c?.reason === 'InconsistentSources' ? c : undefined;
      },
      20_000,
      'rt-good to report the refused bundle',
    );
    assert.match(
      rb.message,
      /clusterTrustBundle: spec\.trustBundle: PEM block 2 \(CERTIFICATE\) has no END line of its own/,
    );
    assert.equal(await onRuntime(), lastGood, 'the runtime keeps the last good bundle');
    await putTrustBundle(kcpKc, CTB_NAME, { trustBundle: lastGood });
    await fleet.waitState('rt-good', 'Ready', 20_000);
  });
});

describe('SIGTERM ends `rtb controller` within its grace period while a runtime drips', () => {
  let child: ChildProcess | undefined;
  let drip: HostileRuntime;
  let output = '';

  before(async () => {
    drip = await startHostileRuntime('drip');
    await putKubeconfigSecret(kcp(), 'rt-drip-cli', drip.kubeconfig);
    await createRuntimeBootstrapper(kcp(), 'rt-drip-cli');
  });
  after(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await new Promise((r) => child?.once('exit', r));
    }
    await drip.stop();
  });

  test('the call in flight is abandoned after the drain, the reflectors stop, the process exits 0', async (t) => {
    const proc = spawnDirectController(kcp().kubeconfigPath, [
      '--no-leader-elect',
      '--metrics-port',
      '0',
      // Longer than the grace period: only the stop's abandon can end the call.
      '--runtime-deadline',
      '10m',
      '--runtime-timeout',
      '5s',
    ]);
    child = proc;
    proc.stdout.on('data', (c: Buffer) => (output += c.toString()));
    proc.stderr.on('data', (c: Buffer) => (output += c.toString()));
    const exited = new Promise<{ code: number | null; at: number }>((resolve) =>
      proc.once('exit', (code) => {
        resolve({ code, at: Date.now() });
      }),
    );
    await eventually(
      () => (drip.open() > 0 ? true : undefined),
      60_000,
      `the controller in a call to the dripping runtime (output:\n${output.slice(-2000)})`,
    );
    // Well into the call: it has been dripping for a while when the signal comes.
    await new Promise((r) => setTimeout(r, 2_000));
    assert.ok(drip.open() > 0);
    const signalled = Date.now();
    proc.kill('SIGTERM');
    const { code, at } = await exited;
    const tookMs = at - signalled;
    t.diagnostic(`exited ${tookMs} ms after SIGTERM`);
    assert.equal(code, 0, output.slice(-3000));
    assert.ok(tookMs < 28_000, `exited ${tookMs} ms after SIGTERM`);
    const lines = output
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg?: string });
    assert.ok(lines.some((l) => l.msg === 'stopping: abandoning the calls to runtimes still in flight'));
    assert.ok(lines.some((l) => l.msg === 'controller stopped'));
    await eventually(() => (drip.open() === 0 ? true : undefined), 5_000, 'the dripping call closed');
  });
});
