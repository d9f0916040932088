import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { V1ValidatingWebhookConfiguration } from '@kubernetes/client-node';
import { VALIDATING_WEBHOOK_CONFIGURATION, WEBHOOK_SERVICE_ACCOUNT } from '../../src/api/runtime-names.js';
import { RuntimeIdentities } from '../../src/controller/direct/runtime-identity.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';
import { useControlPlane } from '../support/control-plane.js';
import { deleteTrustBundle, readTrustBundle } from '../support/trust-bundles.js';
import { eventually } from '../../src/envtest/eventually.js';
import { DirectFleet, registerDriftWebhookHere, writeDriftClientFiles } from '../support/direct-fleet.js';
import { CTB_NAME, clientAs, coreOf, dockerConfig } from '../support/kcp.js';
import { startTestWebhook } from '../support/webhook.js';

const RUNTIMES = ['rt-a', 'rt-b'] as const;
const plane = useControlPlane({ clusters: ['kcp', ...RUNTIMES] });
const domain = (id: string): string => `${id}.kyma.example.com`;
const kcp = () => plane().cluster('kcp');
const rt = (id: string) => plane().cluster(id);

const fleet = new DirectFleet(kcp);
let dir = '';
const repairs: number[] = [];

/** Tampers, then measures until `restored` holds. */
async function timeRepair(
  tamper: () => Promise<unknown>,
  restored: () => Promise<boolean>,
  what: string,
): Promise<number> {
  const t0 = performance.now();
  await tamper();
  await eventually(async () => ((await restored()) ? true : undefined), 15_000, what);
  const ms = performance.now() - t0;
  repairs.push(ms);
  return ms;
}

/** POSTs a WatchEvent to the KCP listener with `cert`; resolves the HTTP status. */
function postEvent(cert: { certPem: string; keyPem: string }, event: unknown): Promise<number> {
  return new Promise<number>((resolve, reject) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: fleet.driftPort,
        path: '/v2/rt-bootstrapper/event',
        method: 'POST',
        cert: cert.certPem,
        key: cert.keyPem,
        ca: fleet.direct.cas.trustBundle(),
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(event));
  });
}

/** The runtime's pull Secret and config ConfigMap, as the core API names them. */
const PULL_SECRET = { name: 'registry-credentials', namespace: 'kyma-system' };
const CONFIG_MAP = { name: 'rt-bootstrapper-config', namespace: 'kyma-system' };

describe('drift channel: runtimes report tampering over mutual TLS and the KCP repairs it', () => {
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rtb-drift-'));
    await fleet.prepare({ 'rt-a': rt('rt-a'), 'rt-b': rt('rt-b') });
    await fleet.start({
      // Long enough that the late write below lands between the fast path and the confirmation.
      driftConfirmDelayMs: 2_000,
      withDriftListener: { rateLimit: { perSecond: 20, burst: 40 } },
    });
    for (const id of RUNTIMES) await fleet.create(id, { 'skr-domain': domain(id) });
    for (const id of RUNTIMES) await fleet.waitReady(id, rt(id));
    for (const id of RUNTIMES) {
      // The drift Secret in files, kept current as a kubelet keeps a Secret volume.
      const files = await writeDriftClientFiles(rt(id), join(dir, id));
      const syncer = setInterval(
        () => void writeDriftClientFiles(rt(id), join(dir, id)).catch(() => undefined),
        200,
      );
      fleet.onStop(() => {
        clearInterval(syncer);
      });
      const hook = await startTestWebhook(rt(id), { drift: { url: fleet.driftUrl, ...files } });
      fleet.onStop(() => hook.stop());
      await registerDriftWebhookHere(rt(id), hook, 'drift-local');
    }
    // The API server's informer needs a moment to see the new registration.
    await new Promise((r) => setTimeout(r, 1_500));
  });
  after(async () => {
    await fleet.stop();
    await rm(dir, { recursive: true, force: true });
  });

  test('an edited pull Secret, a changed ConfigMap and a deleted trust bundle are restored promptly', async (t) => {
    const accepted = (): Promise<number> => fleet.metric('rtb_drift_listener_events_accepted_total');
    const acceptedBefore = await accepted();
    for (const id of RUNTIMES) {
      const core = coreOf(rt(id));
      const original = await core.readNamespacedSecret(PULL_SECRET);
      const ms1 = await timeRepair(
        () =>
          core.replaceNamespacedSecret({
            ...PULL_SECRET,
            body: { ...original, data: dockerConfig('tampered') },
          }),
        async () =>
          (await core.readNamespacedSecret(PULL_SECRET)).data?.['.dockerconfigjson'] ===
          original.data?.['.dockerconfigjson'],
        `${id}: pull Secret restored`,
      );
      const cm = await core.readNamespacedConfigMap(CONFIG_MAP);
      const ms2 = await timeRepair(
        () =>
          core.replaceNamespacedConfigMap({
            ...CONFIG_MAP,
            body: { ...cm, data: { 'rt-bootstrapper-config.json': '{}' } },
          }),
        async () =>
          (await core.readNamespacedConfigMap(CONFIG_MAP)).data?.['rt-bootstrapper-config.json'] ===
          cm.data?.['rt-bootstrapper-config.json'],
        `${id}: ConfigMap restored`,
      );
      const kc = rt(id).kubeConfig();
      const ms3 = await timeRepair(
        () => deleteTrustBundle(kc, CTB_NAME),
        async () => (await readTrustBundle(kc, CTB_NAME).catch(() => undefined)) !== undefined,
        `${id}: ClusterTrustBundle restored`,
      );
      t.diagnostic(
        `${id}: repair after Secret edit ${ms1.toFixed(0)} ms, ConfigMap edit ${ms2.toFixed(0)} ms, CTB delete ${ms3.toFixed(0)} ms`,
      );
      // Far quicker than the periodic resync this replaces (minutes); generous for a shared machine.
      for (const ms of [ms1, ms2, ms3]) assert.ok(ms < 10_000, `repaired in ${ms} ms`);
    }
    // Direct mode watches no runtime and its periodic resync is off here: the events did it.
    assert.ok((await accepted()) - acceptedBefore >= 6, 'each tamper arrived as a drift event');
    const repair = await fleet.registry.getSingleMetric('rtb_drift_repair_seconds')?.get();
    const repaired =
      repair?.values.find(
        (v) => (v as { metricName?: string }).metricName === 'rtb_drift_repair_seconds_count',
      )?.value ?? 0;
    assert.ok(
      repaired >= 1,
      `repairs measured: ${repaired}, accepted: ${(await accepted()) - acceptedBefore}`,
    );
  });

  test('a deleted namespace copy of the pull Secret comes back', async () => {
    const core = coreOf(rt('rt-a'));
    await core.createNamespace({ body: { metadata: { name: 'team-drift' } } });
    const read = () => core.readNamespacedSecret({ name: 'registry-credentials', namespace: 'team-drift' });
    const copy = await eventually(async () => (await read()).data, 15_000, 'a copy');
    await timeRepair(
      () => core.deleteNamespacedSecret({ name: 'registry-credentials', namespace: 'team-drift' }),
      async () => {
        try {
          return JSON.stringify((await read()).data) === JSON.stringify(copy);
        } catch {
          return false;
        }
      },
      'the copy restored',
    );
  });

  test("the full pass after a repair keeps the runtime's drift client certificate", async () => {
    const core = coreOf(rt('rt-a'));
    const certificate = async (): Promise<string | undefined> =>
      (await core.readNamespacedSecret({ name: 'rt-bootstrapper-watcher-tls', namespace: 'kyma-system' }))
        .data?.['tls.crt'];
    const before = await certificate();
    assert.ok(before, 'a drift client certificate on rt-a');
    // No webhook watches NetworkPolicies: only the full pass that follows a repair restores one.
    const policy =
      '/apis/networking.k8s.io/v1/namespaces/kyma-system/networkpolicies/' +
      'rt-bootstrapper-kyma-project.io--ingress-allow-webhook-traffic';
    await kubeRequest(rt('rt-a').kubeConfig(), { method: 'DELETE', path: policy });
    const cm = await core.readNamespacedConfigMap({
      name: 'rt-bootstrapper-config',
      namespace: 'kyma-system',
    });
    await core.replaceNamespacedConfigMap({
      name: 'rt-bootstrapper-config',
      namespace: 'kyma-system',
      body: { ...cm, data: { 'rt-bootstrapper-config.json': '{}' } },
    });
    await eventually(
      () =>
        kubeRequest(rt('rt-a').kubeConfig(), { method: 'GET', path: policy }).then(
          () => true,
          () => undefined,
        ),
      20_000,
      'the NetworkPolicy restored by the full pass',
    );
    assert.equal(await certificate(), before, 'the same client certificate after the full pass');
  });

  test('the listener refuses certificates of another CA at the TLS layer and a foreign SAN with 403', async () => {
    const post = (cert: { certPem: string; keyPem: string }) =>
      postEvent(cert, {
        watched: { Namespace: 'kyma-system', Name: 'x' },
        watchedGvk: { group: '', version: 'v1', kind: 'Secret' },
      });
    const foreignCa = await createCertificateAuthority({ commonName: 'foreign' });
    const foreign = await issueCertificate(foreignCa, {
      commonName: 'rt-a',
      dnsNames: [domain('rt-a')],
      usage: 'client',
    });
    await assert.rejects(post(foreign));
    const wrongSan = await issueCertificate(fleet.direct.cas.current(), {
      commonName: 'rt-a',
      dnsNames: ['evil.example.com'],
      usage: 'client',
    });
    assert.equal(await post(wrongSan), 403);
    const good = await issueCertificate(fleet.direct.cas.current(), {
      commonName: 'rt-a',
      dnsNames: [domain('rt-a')],
      usage: 'client',
    });
    assert.equal(await post(good), 202);
  });

  test('a write reported before the API server stored it is repaired as well', async () => {
    // The drift webhook reports a write before it is stored, so the fast path can run first and
    // find nothing to repair. Here the report comes first and the write half a second later;
    // the write carries our own field manager, so it is not reported again: only the
    // confirmation that follows every repair can restore it (the periodic resync is off).
    const core = coreOf(rt('rt-a'));
    const name = 'rt-bootstrapper-config';
    const read = async () =>
      (await core.readNamespacedConfigMap({ name, namespace: 'kyma-system' })).data?.[
        'rt-bootstrapper-config.json'
      ];
    const original = await read();
    const cert = await issueCertificate(fleet.direct.cas.current(), {
      commonName: 'rt-a',
      dnsNames: [domain('rt-a')],
      usage: 'client',
    });
    const status = await postEvent(cert, {
      watched: { Namespace: 'kyma-system', Name: name },
      watchedGvk: { group: '', version: 'v1', kind: 'ConfigMap' },
    });
    assert.equal(status, 202);
    await new Promise((r) => setTimeout(r, 500));
    await kubeRequest(rt('rt-a').kubeConfig(), {
      method: 'PATCH',
      path: `/api/v1/namespaces/kyma-system/configmaps/${name}`,
      query: { fieldManager: 'rt-bootstrapper' },
      body: { data: { 'rt-bootstrapper-config.json': '{"late":"write"}' } },
    });
    // Not read back: the confirmation a second after the report may already have undone it.
    await eventually(
      async () => ((await read()) === original ? true : undefined),
      10_000,
      'the late write undone',
    );
  });

  test('after a CA rotation the renewed client certificates are used and no event is lost', async () => {
    const before = (
      await coreOf(rt('rt-b')).readNamespacedSecret({
        name: 'rt-bootstrapper-watcher-tls',
        namespace: 'kyma-system',
      })
    ).data?.['tls.crt'];
    await fleet.direct.rotateCa(60 * 60_000);
    await eventually(
      async () => {
        const now = (
          await coreOf(rt('rt-b')).readNamespacedSecret({
            name: 'rt-bootstrapper-watcher-tls',
            namespace: 'kyma-system',
          })
        ).data?.['tls.crt'];
        return now !== before ? true : undefined;
      },
      20_000,
      'a renewed client certificate on rt-b',
    );
    await new Promise((r) => setTimeout(r, 500));
    const core = coreOf(rt('rt-b'));
    const original = await core.readNamespacedSecret({
      name: 'registry-credentials',
      namespace: 'kyma-system',
    });
    await timeRepair(
      () =>
        core.replaceNamespacedSecret({
          name: 'registry-credentials',
          namespace: 'kyma-system',
          body: { ...original, data: dockerConfig('after-rotation') },
        }),
      async () =>
        (await core.readNamespacedSecret({ name: 'registry-credentials', namespace: 'kyma-system' })).data?.[
          '.dockerconfigjson'
        ] === original.data?.['.dockerconfigjson'],
      'repair after the rotation',
    );
  });

  test("the controller's drift registration skips the writes of the user its kubeconfig is there, as it learnt", async () => {
    for (const id of RUNTIMES) {
      // The user of the kubeconfig Secret direct mode uses (putAdminKubeconfigSecret's), as the
      // runtime's API server names it; the test's own writes are another user's (`admin`).
      const user = await new RuntimeIdentities().usernameOf(await clientAs(rt(id), 'rtb-controller'));
      assert.equal(user, 'rtb-controller');
      const vwc = await kubeRequest<V1ValidatingWebhookConfiguration>(rt(id).kubeConfig(), {
        method: 'GET',
        path: `/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/${VALIDATING_WEBHOOK_CONFIGURATION}`,
      });
      assert.deepEqual(vwc.webhooks?.[0]?.matchConditions, [
        {
          name: 'not-rt-bootstrapper-writes',
          expression: `request.userInfo.username != "system:serviceaccount:kyma-system:${WEBHOOK_SERVICE_ACCOUNT}" && request.userInfo.username != "${user}"`,
        },
      ]);
    }
  });

  test('summary of repair latency', (t) => {
    const sorted = [...repairs].sort((a, b) => a - b);
    const pick = (q: number) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
    t.diagnostic(`repairs: ${sorted.length}, p50 ${pick(0.5).toFixed(0)} ms, max ${pick(1).toFixed(0)} ms`);
    assert.ok(sorted.length >= 8);
  });
});
