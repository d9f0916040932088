import { AdmissionregistrationV1Api } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { Agent } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { MUTATING_WEBHOOK_CONFIGURATION, RUNTIME_NAMESPACE } from '../../src/api/runtime-names.js';
import { bucketOf } from '../../src/controller/direct/periodic-resync.js';
import { eventually } from '../../src/envtest/eventually.js';
import { ATTESTATION_PATH, parseAttestationAnswer, type Attestation } from '../../src/api/attestation.js';
import { kubeVersionReader, readVersions } from '../../src/drift/managed-versions.js';
import { postJson } from '../../src/drift/post-json.js';
import { useControlPlane } from '../support/control-plane.js';
import { DirectFleet, writeDriftClientFiles } from '../support/direct-fleet.js';
import { asWebhookServiceAccount } from '../support/kcp.js';
import { startTestWebhook, type TestWebhook } from '../support/webhook.js';

const ID = 'rt-a';
const KEY = `kcp-system/${ID}`;
const PERIOD_MS = 4_000;
// The safeguard's full pass comes once every FULL_EVERY periods, in the share of the key's hash:
// pick a count whose share of this key comes late, so no tick in this test is its turn.
const FULL_EVERY = [50, 51, 52, 53, 54, 55, 56, 57].find((n) => bucketOf(KEY, n) >= 40) ?? 0;

const plane = useControlPlane({ clusters: ['kcp', ID] });
const kcp = () => plane().cluster('kcp');
const rt = () => plane().cluster(ID);
const fleet = new DirectFleet(kcp);

let hook: TestWebhook;
let hookStopped = false;
let dir = '';

const received = (verdict: string): Promise<number> =>
  fleet.metric('rtb_attestations_received_total', { verdict });
const drift = (): Promise<number> => fleet.metric('rtb_drift_listener_events_accepted_total');
const reconcileCount = (): Promise<number> => fleet.metric('controller_runtime_reconcile_total');

/** Waits until the runtime attests again after now, and that attestation is in sync. */
async function nextInSync(what: string): Promise<void> {
  const seen = await received('in_sync');
  await eventually(async () => ((await received('in_sync')) > seen ? true : undefined), 20_000, what);
}

/** Waits until no pass ran for two seconds (more than the delay of a drift report's forced pass). */
async function passesSettled(): Promise<void> {
  let last = await reconcileCount();
  await eventually(
    async () => {
      await new Promise((r) => setTimeout(r, 2_000));
      const now = await reconcileCount();
      const quiet = now === last;
      last = now;
      return quiet ? true : undefined;
    },
    30_000,
    'no pass for two seconds',
  );
}

describe('attestations on real API servers: the periodic resync skips a runtime whose objects are as we left them', () => {
  before(async () => {
    assert.ok(FULL_EVERY > 0, 'a share count that keeps this key out of the test’s ticks');
    dir = await mkdtemp(join(tmpdir(), 'rtb-attest-'));
    await fleet.prepare({ [ID]: rt() });
    await fleet.start({ resyncMs: PERIOD_MS, fullResyncEvery: FULL_EVERY, withDriftListener: true });
    await fleet.create(ID, { 'skr-domain': `${ID}.kyma.example.com` });
    await fleet.waitReady(ID, rt());
    const files = await writeDriftClientFiles(rt(), join(dir, 'drift'));
    // No drift registration points at this webhook: tampering reaches the KCP only by attestation.
    // The webhook reads the runtime as its ServiceAccount, with exactly the RBAC the KCP installed.
    hook = await startTestWebhook(rt(), {
      kubeConfig: await asWebhookServiceAccount(rt()),
      drift: { url: fleet.driftUrl, ...files, attestationInitialDelayMs: 0 },
      // As in production: the replica that leads the runtime agent is the runtime’s attestor.
      trustRestart: {
        namespace: RUNTIME_NAMESPACE,
        // Its count on the Deployment would change what the runtime attests, which is not this test's.
        statusDeployment: false,
      },
      runtimeAgent: {
        identity: 'attesting-replica',
        leaseTiming: { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 250 },
      },
    });
  });
  after(async () => {
    if (!hookStopped) await hook.stop();
    await fleet.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('an attested runtime is skipped: no pass, no write', async () => {
    // The first periodic tick completes the record (onboarding is not a full pass); the
    // runtime's next attestation then matches every object it read under its own RBAC.
    await nextInSync('an attestation in sync');
    // A pass still ending (the one that completed the record, on a busy machine) would count in the
    // window below: only a quiet KCP shows that the tick queued nothing.
    await passesSettled();
    assert.equal(hook.app.restarter?.isActive(), true, 'the attestor is the restarter’s leader');
    const reconciles = await reconcileCount();
    const tick = fleet.direct.periodicResync();
    assert.deepEqual(tick, { forced: 0, skipped: 1 });
    await new Promise((r) => setTimeout(r, 500));
    assert.equal(await reconcileCount(), reconciles, 'no pass was queued');
  });

  test('a change no drift report brings is found by the next attestation and undone', async () => {
    const api = rt().kubeConfig().makeApiClient(AdmissionregistrationV1Api);
    const mwc = await api.readMutatingWebhookConfiguration({ name: MUTATING_WEBHOOK_CONFIGURATION });
    const hooks = mwc.webhooks ?? [];
    assert.ok(hooks.length > 0);
    const original = hooks.map((h) => h.timeoutSeconds);
    const outOfSync = await received('out_of_sync');
    const driftBefore = await drift();
    await api.replaceMutatingWebhookConfiguration({
      name: MUTATING_WEBHOOK_CONFIGURATION,
      body: { ...mwc, webhooks: hooks.map((h) => ({ ...h, timeoutSeconds: 29 })) },
    });
    await eventually(
      async () => {
        const now = await api.readMutatingWebhookConfiguration({ name: MUTATING_WEBHOOK_CONFIGURATION });
        const same =
          JSON.stringify((now.webhooks ?? []).map((h) => h.timeoutSeconds)) === JSON.stringify(original);
        return same ? true : undefined;
      },
      20_000,
      'the MutatingWebhookConfiguration restored',
    );
    assert.ok((await received('out_of_sync')) > outOfSync, 'an attestation found it out of sync');
    assert.equal(await drift(), driftBefore, 'no drift report was involved');
    // The repair's pass recorded what it wrote: the runtime is in sync again and skipped.
    await nextInSync('in sync after the repair');
    assert.deepEqual(fleet.direct.periodicResync(), { forced: 0, skipped: 1 });
  });

  test('a runtime whose attestations stop is re-applied at the next tick', async () => {
    hookStopped = true;
    await hook.stop();
    // A period and a margin without an attestation: the last one is older than a period.
    await new Promise((r) => setTimeout(r, PERIOD_MS + 500));
    assert.deepEqual(fleet.direct.periodicResync(), { forced: 1, skipped: 0 });
  });

  test('a recorded attestation replayed skips nothing: the next tick undoes the change under it', async () => {
    // Whoever reads the drift Secret can post as the runtime: record one in-sync attestation
    // (with its challenge, as the attestor sends it), then change the runtime and replay it.
    const agent = new Agent({
      cert: await readFile(join(dir, 'drift', 'tls.crt')),
      key: await readFile(join(dir, 'drift', 'tls.key')),
      ca: await readFile(join(dir, 'drift', 'ca.crt')),
    });
    const url = new URL(`${fleet.driftUrl}${ATTESTATION_PATH}`);
    const post = async (body: Attestation) => {
      const answer = await postJson(url, agent, JSON.stringify(body), 10_000, 1 << 20).answer;
      assert.equal(answer.status, 200, answer.body.toString());
      return parseAttestationAnswer(answer.body);
    };
    // The rounds below are counted in ticks: a timer ticking in between would start one more.
    // A controller whose timer does not come round in this test is ticked by hand; its first
    // tick re-applies the runtime (nothing attested to this process) and completes its record.
    await fleet.restart({
      registry: fleet.registry,
      resyncMs: 3_600_000,
      fullResyncEvery: FULL_EVERY,
      withDriftListener: true,
    });
    assert.deepEqual(fleet.direct.periodicResync(), { forced: 1, skipped: 0 });
    const first = await eventually(
      async () => {
        const answer = await post({ objects: [] });
        return answer.check.length > 0 ? answer : undefined;
      },
      20_000,
      'the record complete',
    );
    const objects = await readVersions(
      first.check,
      kubeVersionReader(rt().kubeConfig(), 5_000),
      4,
      AbortSignal.timeout(10_000),
    );
    const recorded: Attestation = { objects, challenge: first.challenge };
    assert.equal((await post(recorded)).inSync, true, 'recorded while in sync');

    const api = rt().kubeConfig().makeApiClient(AdmissionregistrationV1Api);
    await api.deleteMutatingWebhookConfiguration({ name: MUTATING_WEBHOOK_CONFIGURATION });
    const gone = async () =>
      api.readMutatingWebhookConfiguration({ name: MUTATING_WEBHOOK_CONFIGURATION }).then(
        () => false,
        () => true,
      );

    // In the round it was made in: its challenge was taken when it came, so the replay is stale
    // and the tick re-applies the runtime.
    const stale = await received('stale');
    const answer = await post(recorded);
    assert.equal(answer.inSync, false);
    assert.equal(await received('stale'), stale + 1);
    assert.equal(await gone(), true, 'nothing repaired it meanwhile');
    assert.deepEqual(fleet.direct.periodicResync(), { forced: 1, skipped: 0 });
    await eventually(async () => ((await gone()) ? undefined : true), 20_000, 'the configuration restored');
    agent.destroy();
  });
});
