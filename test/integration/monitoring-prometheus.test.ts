import {
  AdmissionregistrationV1Api,
  type KubernetesObject,
  type V1MutatingWebhookConfiguration,
} from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { after, before, describe, test } from 'node:test';
import { newRolloutPolicy, rolloutPolicyPath } from '../../src/api/rollout-policy.js';
import { rolloutPolicyCrd } from '../../src/api/rollout-policy-crd.js';
import type { RuntimeBootstrapper } from '../../src/api/runtime-bootstrapper.js';
import { MUTATING_WEBHOOK_NAME, WATCHER_TLS_SECRET } from '../../src/api/runtime-names.js';
import { startControllerApp, type ControllerApp } from '../../src/controller/controller-app.js';
import { directModeStarter } from '../../src/controller/direct/direct-mode.js';
import { lastChange } from '../../src/controller/expiry/source-expiry.js';
import { eventually } from '../../src/envtest/eventually.js';
import { freePort } from '../../src/envtest/free-port.js';
import {
  prometheusTools,
  startPrometheus,
  PrometheusApiError,
  type PrometheusServer,
} from '../../src/envtest/prometheus.js';
import { ensureCrds } from '../../src/kube/crd.js';
import { applyObjects } from '../../src/kube/apply.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { dashboardQueries } from '../../src/monitoring/dashboard-model.js';
import { renderMonitoring } from '../../src/monitoring/monitoring-manifests.js';
import { defaultMonitoringOptions } from '../../src/monitoring/monitoring-options.js';
import type { PromQuery } from '../../src/monitoring/promql-query.js';
import { loadCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';
import { renderWebhookManifests } from '../../src/render/webhook-manifests.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { useControlPlane } from '../support/control-plane.js';
import { writeDriftClientFiles } from '../support/direct-fleet.js';
import { driftListenerOptions } from '../support/drift-listener-options.js';
import {
  CTB_NAME,
  KCP_PULL_SECRET,
  RB_PATH,
  coreOf,
  createRuntimeBootstrapper,
  dockerConfig,
  keepDeploymentsAvailable,
  prepareKcp,
  putAdminKubeconfigSecret,
} from '../support/kcp.js';
import { readTrustBundle } from '../support/trust-bundles.js';
import { startTestWebhook, type TestWebhook } from '../support/webhook.js';

const ID = 'rt-a';
/** A runtime whose kubeconfig Secret does not exist: it stays in Error (errors, retries, not Ready). */
const GONE = 'rt-gone';
const plane = useControlPlane({ clusters: ['kcp', ID] });
const kcp = () => plane().cluster('kcp');
const rt = () => plane().cluster(ID);
const options = defaultMonitoringOptions();
const monitoring = renderMonitoring(options);
const sides = [monitoring.kcp, monitoring.runtime] as const;
const queries: PromQuery[] = sides.flatMap((s) => [
  ...dashboardQueries(s.dashboard),
  ...s.alerts.rules.map((r) => r.expr),
]);
const referenced = [...new Set(queries.flatMap((q) => q.metrics))].sort();

/**
 * Families that only get a series from events this landscape cannot make in a test's time: their
 * names are checked against the metadata Prometheus scraped (the HELP and TYPE lines prom-client
 * serves before a first sample), not against series.
 */
const EVENT_ONLY: Readonly<Record<string, string>> = {
  rtb_trust_restart_owners_restarted_total: "a restart waits past the kubelet's 5-minute bundle cache",
  rtb_webhook_trust_bundle_skipped_total: 'only a runtime that cannot take the trust-bundle mount counts',
};

let dir = '';
let controller: ControllerApp;
let hook: TestWebhook;
let prometheus: PrometheusServer;
/** What `after` stops (a `before` that failed half way started only some). */
const started: { prometheus?: PrometheusServer; hook?: TestWebhook; controller?: ControllerApp } = {};
let listenerPort = 0;
let stopMarking: () => void = () => undefined;

const notAfterSeconds = (pem: string): number => Date.parse(new X509Certificate(pem).validTo) / 1000;
const b64 = (s: string | undefined): string => Buffer.from(s ?? '', 'base64').toString();

/** An instant query; resolves the samples. */
async function query(expr: string): Promise<{ metric: Record<string, string>; value: [number, string] }[]> {
  const data = await prometheus.api<{ resultType: string; result: unknown }>('query', { query: expr });
  return data.resultType === 'vector'
    ? (data.result as { metric: Record<string, string>; value: [number, string] }[])
    : [];
}

/** The one value of `expr`. */
async function value(expr: string): Promise<number> {
  const samples = await query(expr);
  assert.equal(samples.length, 1, `one sample of ${expr}: ${JSON.stringify(samples)}`);
  return Number(samples[0]!.value[1]);
}

/** The referenced names Prometheus holds series of. */
async function namesWithSeries(): Promise<Set<string>> {
  const samples = await query(`count by (__name__) ({__name__=~"${referenced.join('|')}"})`);
  return new Set(samples.map((s) => s.metric.__name__ ?? ''));
}

/** A Pod of the seed's, in `namespace`. */
function seedPod(namespace: string, name: string): KubernetesObject {
  const pod: KubernetesObject & { spec: object } = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace, annotations: { 'rt-cfg.kyma-project.io/all': 'true' } },
    spec: { containers: [{ name: 'pause', image: 'replace.me/kyma-project/pause:e2e' }] },
  };
  return pod;
}

/** A registration that calls nothing (a closed port) for Pods in namespaces labelled `label`. */
function deadRegistration(
  name: string,
  label: string,
  failurePolicy: 'Ignore' | 'Fail',
): V1MutatingWebhookConfiguration {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'MutatingWebhookConfiguration',
    metadata: { name },
    webhooks: [
      {
        name: MUTATING_WEBHOOK_NAME,
        clientConfig: { url: 'https://127.0.0.1:1/mutate' },
        rules: [{ apiGroups: [''], apiVersions: ['v1'], operations: ['CREATE'], resources: ['pods'] }],
        namespaceSelector: { matchLabels: { 'rtb-monitoring': label } },
        failurePolicy,
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        timeoutSeconds: 2,
      },
    ],
  };
}

/** POSTs `body` to `url` over TLS with `tls`; resolves the status. */
function post(url: string, body: Buffer, tls: { ca: string; cert?: string; key?: string }): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { method: 'POST', ...tls, headers: { 'content-type': 'application/json' } },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The certificate the listener serves. */
function servedCertificate(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const raw = socket.getPeerCertificate().raw;
      socket.end();
      resolve(new X509Certificate(raw).toString());
    });
    socket.on('error', reject);
  });
}

/** Provokes what the dashboards and alerts read: admissions, failures open and closed, refusals, drift. */
async function makeEvents(): Promise<void> {
  const core = coreOf(rt());
  const namespaces: { name: string; labels: Record<string, string> }[] = [
    { name: 'monitoring-pods', labels: {} },
    { name: 'monitoring-open', labels: { 'rtb-monitoring': 'open' } },
    { name: 'monitoring-closed', labels: { 'rtb-monitoring': 'closed' } },
  ];
  for (const ns of namespaces) await core.createNamespace({ body: { metadata: ns } });
  const admissions = rt().kubeConfig().makeApiClient(AdmissionregistrationV1Api);
  await admissions.createMutatingWebhookConfiguration({
    body: deadRegistration('monitoring-open', 'open', 'Ignore'),
  });
  await admissions.createMutatingWebhookConfiguration({
    body: deadRegistration('monitoring-closed', 'closed', 'Fail'),
  });
  // The API server reads registrations through an informer.
  await new Promise((r) => setTimeout(r, 1_500));
  await applyObjects(rt().kubeConfig(), [seedPod('monitoring-pods', 'mutated')]);
  await applyObjects(rt().kubeConfig(), [seedPod('monitoring-open', 'failed-open')]);
  await assert.rejects(applyObjects(rt().kubeConfig(), [seedPod('monitoring-closed', 'refused')]));
  // A rollout policy: the rollout's phase, wave and the runtimes by webhook release are exported.
  await kubeRequest(kcp().kubeConfig(), {
    method: 'POST',
    path: rolloutPolicyPath(),
    body: newRolloutPolicy({ waves: [{ name: 'all', percent: 100, soak: '0s' }], failureThreshold: 5 }),
  });
  // A body over the limit is turned away before it is read.
  assert.equal(await post(hook.url, Buffer.alloc(9 * 1024 * 1024, 32), { ca: hook.ca.certPem }), 413);
  // Tampering with the pull Secret is reported and repaired.
  const secret = { name: 'registry-credentials', namespace: 'kyma-system' };
  const original = await core.readNamespacedSecret(secret);
  await core.replaceNamespacedSecret({ ...secret, body: { ...original, data: dockerConfig('tampered') } });
  // A certificate of our CA for a runtime the KCP does not know is refused.
  const caSecret = await coreOf(kcp()).readNamespacedSecret({
    name: 'rt-bootstrapper-ca',
    namespace: 'kcp-system',
  });
  const ca = await loadCertificateAuthority(b64(caSecret.data?.['tls.crt']), b64(caSecret.data?.['tls.key']));
  const stranger = await issueCertificate(ca, {
    commonName: 'rt-unknown',
    dnsNames: ['rt-unknown.example.com'],
    usage: 'client',
  });
  const event = {
    watched: { Namespace: 'kyma-system', Name: 'x' },
    watchedGvk: { group: '', version: 'v1', kind: 'Secret' },
  };
  const status = await post(
    `https://127.0.0.1:${listenerPort}/v2/rt-bootstrapper/event`,
    Buffer.from(JSON.stringify(event)),
    {
      ca: ca.certPem,
      cert: stranger.certPem,
      key: stranger.keyPem,
    },
  );
  assert.ok(status >= 400, `a stranger's report is refused (${status})`);
}

describe("Debian's Prometheus scrapes a landscape: every dashboard query and alert expression reads series that exist", () => {
  before(async () => {
    const tools = await prometheusTools();
    dir = await mkdtemp(join(tmpdir(), 'rtb-prometheus-'));
    await prepareKcp(kcp());
    await ensureCrds(kcp().kubeConfig(), [rolloutPolicyCrd()]);
    await putAdminKubeconfigSecret(kcp(), rt(), ID);
    listenerPort = await freePort();
    controller = started.controller = await startControllerApp({
      kubeConfig: kcp().kubeConfig(),
      namespace: 'kcp-system',
      pullSecretName: KCP_PULL_SECRET,
      clusterTrustBundleName: CTB_NAME,
      configMapName: 'rt-bootstrapper-config',
      mode: 'direct',
      starter: directModeStarter({
        release: { image: 'example.com/rt-bootstrapper:1.0.0', version: '1.0.0' },
        ...driftListenerOptions(listenerPort),
        fullResyncEvery: 1,
        rollout: { policyName: 'default', autoRollback: true },
        perRuntimeMetrics: true,
      }),
      modeOptions: {
        signal: 'annotation',
        coalesceMs: 100,
        concurrency: 10,
        resyncMs: 3_000,
        stateConfigMapName: 'rt-bootstrapper-state',
      },
      leaderElection: { leaseName: 'rt-bootstrapper-controller' },
      host: '127.0.0.1',
      port: 0,
      logger: silentLogger(),
    });
    stopMarking = keepDeploymentsAvailable(() => [rt()]);
    await createRuntimeBootstrapper(kcp(), ID, { 'skr-domain': `${ID}.kyma.example.com` });
    await createRuntimeBootstrapper(kcp(), GONE);
    await eventually(
      async () => {
        const rb = await kubeRequest<RuntimeBootstrapper>(kcp().kubeConfig(), {
          method: 'GET',
          path: `${RB_PATH}/${ID}`,
        });
        return rb.status?.state === 'Ready' ? true : undefined;
      },
      60_000,
      `${ID} Ready`,
    );
    // The runtime's webhook in this process, with the drift client certificate the KCP gave it.
    const files = await writeDriftClientFiles(rt(), join(dir, 'drift'));
    hook = started.hook = await startTestWebhook(rt(), {
      metricsPort: 0,
      drift: { url: `https://127.0.0.1:${listenerPort}`, ...files, attestationInitialDelayMs: 0 },
      trustRestart: {
        namespace: 'kyma-system',
        statusDeployment: false,
      },
      runtimeAgent: {
        identity: 'monitoring-replica',
        leaseTiming: { leaseDurationMs: 2_000, renewDeadlineMs: 1_500, retryPeriodMs: 250 },
      },
    });
    // The API server calls this webhook (the registration direct mode made points at a Service
    // without endpoints: those calls fail open), and its drift registration reports to the KCP.
    const manifests = renderWebhookManifests({
      image: 'x',
      url: hook.url,
      caBundlePem: hook.ca.certPem,
      driftListenerUrl: 'https://unused',
    });
    const mwc = manifests.mutatingWebhookConfiguration;
    const vwc = manifests.validatingWebhookConfiguration!;
    await applyObjects(rt().kubeConfig(), [
      { ...mwc, metadata: { ...mwc.metadata, name: 'monitoring-local' } },
      { ...vwc, metadata: { ...vwc.metadata, name: 'monitoring-drift' } },
    ]);
    // Prometheus scrapes the controller, the webhook and the runtime's API server (as system:masters).
    const scraper = await issueCertificate(rt().ca, {
      commonName: 'prometheus',
      organizations: ['system:masters'],
      usage: 'client',
    });
    await writeFile(join(dir, 'apiserver-ca.crt'), rt().caPem);
    await writeFile(join(dir, 'scraper.crt'), scraper.certPem);
    await writeFile(join(dir, 'scraper.key'), scraper.keyPem);
    prometheus = started.prometheus = await startPrometheus({
      tools,
      dir,
      scrapeConfigs: [
        { job_name: options.controllerJob, static_configs: [{ targets: [`127.0.0.1:${controller.port}`] }] },
        {
          job_name: options.webhookJob,
          static_configs: [{ targets: [`127.0.0.1:${hook.app.metricsPort ?? 0}`] }],
        },
        {
          job_name: 'apiserver',
          scheme: 'https',
          tls_config: {
            ca_file: join(dir, 'apiserver-ca.crt'),
            cert_file: join(dir, 'scraper.crt'),
            key_file: join(dir, 'scraper.key'),
          },
          static_configs: [{ targets: [new URL(rt().server).host] }],
        },
      ],
    });
    await new Promise((r) => setTimeout(r, 1_500));
    await makeEvents();
  });
  after(async () => {
    stopMarking();
    await started.prometheus?.stop();
    await started.hook?.stop();
    await started.controller?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  test('every target is up', async () => {
    await eventually(
      async () => ((await query('up == 1')).length === 3 ? true : undefined),
      30_000,
      'the controller, the webhook and the API server scraped',
    );
  });

  test('every dashboard query and alert expression parses', async () => {
    for (const q of queries) {
      try {
        await query(q.expr);
      } catch (error) {
        assert.fail(`${q.expr}: ${error instanceof PrometheusApiError ? error.message : String(error)}`);
      }
    }
  });

  test('every metric they read has series (a few that only events make: known to the scrape)', async () => {
    let missing: string[] = [];
    await eventually(
      async () => {
        const present = await namesWithSeries();
        missing = referenced.filter((n) => !present.has(n) && EVENT_ONLY[n] === undefined);
        return missing.length === 0 ? true : undefined;
      },
      60_000,
      'every referenced metric scraped',
    ).catch(() => undefined);
    assert.deepEqual(missing, [], `no series of ${missing.join(', ')}`);
    for (const name of Object.keys(EVENT_ONLY)) {
      assert.ok(referenced.includes(name), `${name} is still read by a query`);
      const metadata = await prometheus.api<Record<string, unknown[]>>('metadata', { metric: name });
      assert.ok((metadata[name] ?? []).length > 0, `${name} is served (metadata)`);
    }
  });

  test("the expiry metrics are the certificates' notAfter; the pull Secret's last change its last write", async () => {
    const kcpCore = coreOf(kcp());
    const ca = await kcpCore.readNamespacedSecret({ name: 'rt-bootstrapper-ca', namespace: 'kcp-system' });
    const driftClient = await coreOf(rt()).readNamespacedSecret({
      name: WATCHER_TLS_SECRET,
      namespace: 'kyma-system',
    });
    const bundle = await readTrustBundle(kcp().kubeConfig(), CTB_NAME);
    const pull = await kcpCore.readNamespacedSecret({ name: KCP_PULL_SECRET, namespace: 'kcp-system' });
    const c = `job="${options.controllerJob}"`;
    const expected: [string, number][] = [
      [`rtb_kcp_ca_expiration_timestamp_seconds{${c}}`, notAfterSeconds(b64(ca.data?.['tls.crt']))],
      [
        `rtb_drift_client_certificate_expiration_timestamp_seconds{${c},state="Ready"}`,
        notAfterSeconds(b64(driftClient.data?.['tls.crt'])),
      ],
      [
        `rtb_runtime_drift_client_certificate_expiration_timestamp_seconds{${c},runtime_id="${ID}"}`,
        notAfterSeconds(b64(driftClient.data?.['tls.crt'])),
      ],
      [
        `rtb_drift_listener_certificate_expiration_timestamp_seconds{${c}}`,
        notAfterSeconds(await servedCertificate(listenerPort)),
      ],
      [
        `rtb_trust_bundle_expiration_timestamp_seconds{${c}}`,
        notAfterSeconds(bundle?.spec.trustBundle ?? ''),
      ],
      [`rtb_pull_secret_last_change_timestamp_seconds{${c}}`, (lastChange(pull.metadata) ?? 0) / 1000],
      [
        `rtb_webhook_serving_certificate_expiration_timestamp_seconds{job="${options.webhookJob}"}`,
        notAfterSeconds(await readFile(hook.certFile, 'utf8')),
      ],
    ];
    for (const [expr, want] of expected) assert.equal(await value(expr), want, expr);
  });

  test('the opt-in per-runtime state names the broken runtime; the not-Ready clock runs', async () => {
    assert.equal(await value(`rtb_runtime_state{runtime_id="${GONE}",state="Error"}`), 1);
    assert.equal(await value(`rtb_runtime_state{runtime_id="${ID}",state="Ready"}`), 1);
    const since = await value('rtb_runtimes_not_ready_since_timestamp_seconds');
    assert.ok(since <= Date.now() / 1000 && since > Date.now() / 1000 - 600, `${since}`);
  });
});
