/**
 * Direct mode takes over a runtime that KIM installed (test/support/kim-installer.ts plays KIM):
 * the webhook runs with its own CA and serves real admission through the API server while the
 * KCP replaces the serving certificate with one from its CA, step by step. No kubelet runs here,
 * so the webhook's replicas run in this process (test/support/webhook-replicas.ts), a TCP front
 * plays the Service's load balancing (test/support/tcp-balancer.ts) and the rollout the KCP's
 * Deployment causes is played as the deployment controller would: a new replica up, an old one
 * out of the endpoints and stopped, and again.
 */
import { AdmissionregistrationV1Api, CoreV1Api, type V1Pod, type V1Secret } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import {
  MUTATING_WEBHOOK_CONFIGURATION,
  RUNTIME_NAMESPACE,
  WEBHOOK_DEPLOYMENT,
  WEBHOOK_TLS_SECRET,
} from '../../src/api/runtime-names.js';
import { reportDeploymentRollout } from '../../src/local/simulated-kubelet.js';
import { issuedBy, parseCertificates } from '../../src/pki/pem-certificates.js';
import {
  KCP_SERVING_POLICY,
  WEBHOOK_SERVING_POLICY,
  type ServingPolicy,
} from '../../src/serving-cert/serving-policy.js';
import { renderKimManifests } from '../../src/render/kim-manifests.js';
import { useControlPlane } from '../support/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { seedConfigText } from '../support/fixtures.js';
import { DirectFleet, conditionOf as condition } from '../support/direct-fleet.js';
import { dockerConfig, markDeploymentAvailable } from '../support/kcp.js';
import { kimConfigure, kimInstall, type KimSources } from '../support/kim-installer.js';
import { startTcpBalancer, type TcpBalancer } from '../support/tcp-balancer.js';
import {
  caBundle,
  createSeedPod,
  handshake,
  mutateUrl,
  registerByUrl,
  simulateRollout,
  startReplica,
  type Replica,
} from '../support/webhook-replicas.js';
import { readWebhookDeployment } from '../support/webhook-deployment.js';

const plane = useControlPlane({ clusters: ['kcp', 'rt'] });
const kcp = () => plane().cluster('kcp');
const rt = () => plane().cluster('rt');
const IMAGE = 'europe-docker.pkg.dev/kyma-project/prod/rt-bootstrapper:1.0.0';
const KIM_MANIFESTS = renderKimManifests({ image: IMAGE, version: '1.0.0' }).text;
const SOURCES: KimSources = {
  configMapData: { 'rt-bootstrapper-config.json': seedConfigText() },
  pullSecret: { type: 'kubernetes.io/dockerconfigjson', data: dockerConfig('kim') },
};
/** The webhook's own writer, settling in 2 s instead of 20. */
const KIM_POLICY: ServingPolicy = { ...WEBHOOK_SERVING_POLICY, settleMs: 2_000 };
/** The KCP's: 3 s for the API server to load a caBundle, the old CA trusted 6 s after the move. */
const KCP_POLICY: ServingPolicy = { ...KCP_SERVING_POLICY, settleMs: 3_000, overlapMs: 6_000 };
const MODIFIED = 'rt-bootstrapper.kyma-project.io/modified';
const DEFAULTED = 'rt-bootstrapper.kyma-project.io/defaulted';

/** Where the serving certificate is, read from the Secret. */
type Phase =
  | 'KIM certificate, KIM CA'
  | 'KIM certificate, both CAs'
  | 'KCP certificate, both CAs'
  | 'KCP certificate, KCP CA';

const fleet = new DirectFleet(kcp);
let balancer: TcpBalancer | undefined;
/** The replicas in the endpoints (the balancer's backends). */
let serving: Replica[] = [];
/** Every replica ever started (stopped at the end, counted for admission calls). */
const started: Replica[] = [];
/** Pods created so far in this file that the webhook mutated. */
let mutatedPods = 0;

const decode = (b64: string | undefined): string => Buffer.from(b64 ?? '', 'base64').toString('utf8');
const fingerprints = (pem: string | undefined): string[] =>
  parseCertificates(pem).certificates.map((c) => c.fingerprint);
const readSecret = (): Promise<V1Secret> =>
  rt()
    .kubeConfig()
    .makeApiClient(CoreV1Api)
    .readNamespacedSecret({ name: WEBHOOK_TLS_SECRET, namespace: RUNTIME_NAMESPACE });
const readRb = () => fleet.readRb('rt');
const kcpCaPem = (): string => fleet.direct.cas.current().certPem;

/** Where the takeover stands, from the Secret alone. */
function phaseOf(secret: V1Secret): Phase {
  const leaf = parseCertificates(decode(secret.data?.['tls.crt'])).certificates[0];
  const kcpCa = fleet.started ? parseCertificates(kcpCaPem()).certificates[0] : undefined;
  const byKcp = leaf !== undefined && kcpCa !== undefined && issuedBy(leaf, kcpCa);
  const cas = fingerprints(decode(secret.data?.['ca.crt']));
  const kcpOnly = kcpCa !== undefined && cas.length === 1 && cas[0] === kcpCa.fingerprint;
  if (byKcp) return kcpOnly ? 'KCP certificate, KCP CA' : 'KCP certificate, both CAs';
  return cas.length > 1 ? 'KIM certificate, both CAs' : 'KIM certificate, KIM CA';
}

/** Mutated by our webhook: both marks and the registry rewrite. */
const mutated = (pod: V1Pod): boolean =>
  pod.metadata?.annotations?.[MODIFIED] === 'true' &&
  pod.metadata.annotations[DEFAULTED] === 'true' &&
  pod.spec?.containers[0]?.image === 'ghcr.io/app:1';

/** Admission requests answered by every replica ever started. */
async function admissionCalls(): Promise<number> {
  let sum = 0;
  for (const r of started) {
    const metric = await r.app.registry.getSingleMetric('rtb_webhook_requests_total')?.get();
    for (const v of metric?.values ?? []) sum += v.value;
  }
  return sum;
}

/** Mutating webhooks acting on Pods, over every configuration on the runtime. */
async function podWebhooks(): Promise<string[]> {
  const list = await rt()
    .kubeConfig()
    .makeApiClient(AdmissionregistrationV1Api)
    .listMutatingWebhookConfiguration();
  return list.items.flatMap((c) =>
    (c.webhooks ?? [])
      .filter((w) => (w.rules ?? []).some((r) => r.resources?.includes('pods')))
      .map((w) => `${c.metadata?.name ?? ''}/${w.name}`),
  );
}

async function start(identity: string, issuer: 'own' | 'external'): Promise<Replica> {
  const r = await startReplica(rt(), identity, issuer === 'own' ? { policy: KIM_POLICY } : { issuer });
  started.push(r);
  return r;
}

/**
 * Takes `replica` out of the endpoints, then stops it as a terminating Pod stops on SIGTERM: a
 * shutdown delay (shortened here) in which every answer closes its connection, so the API server
 * leaves its pooled connections to this replica after their next call, then the drain. Stopped
 * without the delay, the drain closes an idle pooled connection while the API server may be
 * writing the next call on it: that call fails (a 500 under failurePolicy Fail), as it would in
 * a cluster.
 */
async function retire(replica: Replica): Promise<void> {
  serving = serving.filter((r) => r !== replica);
  balancer?.setBackends(serving.map((r) => r.app.port));
  await replica.app.stop({ delayMs: 1_500, timeoutMs: 10_000 });
}

/** Creates Pods one after another until told to stop; records what each met. */
class PodStream {
  readonly byPhase = new Map<Phase, number>();
  readonly problems: string[] = [];
  created = 0;
  private stopping = false;
  private readonly done: Promise<void>;

  constructor() {
    this.done = this.run();
  }

  async stop(): Promise<void> {
    this.stopping = true;
    await this.done;
  }

  private async run(): Promise<void> {
    while (!this.stopping) {
      const phase = phaseOf(await readSecret());
      const name = `takeover-${this.created}`;
      try {
        const pod = await createSeedPod(rt(), name);
        this.created += 1;
        if (mutated(pod)) mutatedPods += 1;
        else this.problems.push(`${name} (${phase}) admitted but not mutated`);
        this.byPhase.set(phase, (this.byPhase.get(phase) ?? 0) + 1);
      } catch (error) {
        this.problems.push(`${name} (${phase}) refused: ${String(error).split('\n')[0] ?? ''}`);
      }
      const hooks = await podWebhooks();
      if (hooks.length !== 1) this.problems.push(`${phase}: webhooks acting on Pods: ${hooks.join(', ')}`);
      // The API server's own check of every replica in the endpoints: our caBundle alone as trust.
      const bundle = (await caBundle(rt())) ?? '';
      for (const r of [...serving])
        if (!(await handshake(r.app.port, bundle)) && serving.includes(r))
          this.problems.push(`${phase}: ${r.identity} serves a certificate the caBundle does not trust`);
    }
  }
}

describe('direct mode takes over a runtime KIM installed, without a window', () => {
  before(async () => {
    await fleet.prepare({ rt: rt() });
    fleet.onStop(() => balancer?.stop());
    fleet.onStop(() => Promise.all(started.map((r) => r.app.stop())));
  });
  after(() => fleet.stop());

  test('KIM installs the webhook; it serves admission with its own CA', async () => {
    const kc = rt().kubeConfig();
    await kc.makeApiClient(CoreV1Api).createNamespace({ body: { metadata: { name: RUNTIME_NAMESPACE } } });
    await kimConfigure(kc, SOURCES);
    await kimInstall(kc, KIM_MANIFESTS);
    serving = [await start('kim-a', 'own'), await start('kim-b', 'own')];
    await simulateRollout(rt(), serving);
    balancer = await startTcpBalancer(serving.map((r) => r.app.port));
    await registerByUrl(rt(), balancer.port);
    let n = 0;
    await eventually(
      async () => {
        const pod = await createSeedPod(rt(), `warm-up-${n++}`);
        if (!mutated(pod)) return undefined;
        mutatedPods += 1;
        return true;
      },
      20_000,
      'a Pod mutated through the API server',
    );
    const secret = await readSecret();
    assert.ok(secret.data?.['ca.key'], 'the webhook keeps its own CA');
    assert.equal(phaseOf(secret), 'KIM certificate, KIM CA');
    assert.equal(serving.filter((r) => r.app.isCertWriter()).length, 1, 'one of them writes');
  });

  test('the KCP takes over: every Pod admitted and mutated by exactly one webhook; then Secret and caBundle carry only its CA', async (t) => {
    const kc = rt().kubeConfig();
    const pods = new PodStream();
    try {
      await fleet.start({
        runtimeTimeoutMs: 5_000,
        servingPolicy: KCP_POLICY,
        webhookRouting: {
          registrationUrl: mutateUrl(balancer?.port ?? 0),
          extraSans: ['127.0.0.1'],
        },
      });
      await fleet.create('rt');

      // The KCP's Deployment rolls the Pods: a new replica up, an old one out, and again.
      await eventually(
        async () => {
          const d = await readWebhookDeployment(kc);
          const args = d.spec?.template.spec?.containers[0]?.args ?? [];
          return args.includes('--serving-cert-issuer=external') ? true : undefined;
        },
        30_000,
        "the KCP's Deployment",
      );
      await reportDeploymentRollout(kc, RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT, false);
      for (const identity of ['direct-a', 'direct-b']) {
        const next = await start(identity, 'external');
        await eventually(() => (next.app.ready() ? true : undefined), 30_000, `${identity} ready`);
        serving.push(next);
        balancer?.setBackends(serving.map((r) => r.app.port));
        const old = serving.find((r) => r.identity.startsWith('kim-'));
        if (old) await retire(old);
      }
      await reportDeploymentRollout(kc, RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT, true);

      const rb = await fleet.waitState('rt', 'Ready', 60_000);
      assert.equal(condition(rb, 'ExclusivelyManaged')?.status, 'True', 'KIM wrote before the takeover only');
      await eventually(
        () => ((pods.byPhase.get('KCP certificate, KCP CA') ?? 0) >= 5 ? true : undefined),
        60_000,
        "Pods created after the KIM CA left (overlap ends after the KCP's next reconcile)",
      );
    } finally {
      await pods.stop();
    }

    t.diagnostic(
      `${pods.created} Pods during the takeover: ${[...pods.byPhase].map(([p, n]) => `${n} while ${p}`).join('; ')}`,
    );
    assert.deepEqual(pods.problems, []);
    for (const phase of [
      'KIM certificate, KIM CA',
      'KIM certificate, both CAs',
      'KCP certificate, both CAs',
      'KCP certificate, KCP CA',
    ] as const)
      assert.ok((pods.byPhase.get(phase) ?? 0) > 0, `Pods created while: ${phase}`);
    assert.equal(await admissionCalls(), mutatedPods, 'one admission call per Pod, never two');
    assert.ok(
      serving.every((r) => !r.app.isCertWriter()),
      "the KCP's replicas never write the certificate",
    );

    const secret = await readSecret();
    const kcpFingerprint = fingerprints(kcpCaPem());
    assert.deepEqual(fingerprints(decode(secret.data?.['ca.crt'])), kcpFingerprint);
    assert.equal(secret.data?.['ca.key'], undefined, "the webhook's own CA key left with its CA");
    const bundle = await caBundle(rt());
    assert.deepEqual(fingerprints(bundle), kcpFingerprint, "the caBundle holds the KCP's CA alone");
    const mwc = await kc
      .makeApiClient(AdmissionregistrationV1Api)
      .readMutatingWebhookConfiguration({ name: MUTATING_WEBHOOK_CONFIGURATION });
    const bundleWriters = (mwc.metadata?.managedFields ?? [])
      .filter((f) => JSON.stringify(f.fieldsV1 ?? {}).includes('"f:caBundle"'))
      .map((f) => f.manager);
    assert.ok(bundleWriters.includes('rt-bootstrapper-webhook'), bundleWriters.join(', '));
    assert.ok(!bundleWriters.includes('rt-bootstrapper'), 'the registration never carries a caBundle');
    const rb = await readRb();
    assert.equal(condition(rb, 'ServingCertificate')?.status, 'True');
    assert.equal(condition(rb, 'ServingCertificate')?.reason, 'Current');
  });

  test('KIM writing again after the takeover turns ExclusivelyManaged False; quiet again, True', async () => {
    const running = fleet.direct;
    // managedFields times have a resolution of one second: KIM's write must come after ours.
    await new Promise((r) => setTimeout(r, 1_100));
    // KIM applies its manifests again; its registration is left out, since ours points at a URL
    // here and KIM's Service would be refused beside it.
    const withoutRegistration = KIM_MANIFESTS.split('---')
      .filter((doc) => !doc.includes('kind: MutatingWebhookConfiguration'))
      .join('---');
    await kimInstall(rt().kubeConfig(), withoutRegistration);
    assert.ok(running.resync('rt'));
    const rb = await eventually(
      async () => {
        // Each apply of a changed Deployment is a rollout: reported done, as the Pods are not the point here.
        await markDeploymentAvailable(rt()).catch(() => undefined);
        const r = await readRb();
        return condition(r, 'ExclusivelyManaged')?.status === 'False' ? r : undefined;
      },
      30_000,
      'ExclusivelyManaged False',
    );
    const c = condition(rb, 'ExclusivelyManaged');
    assert.ok(c);
    assert.equal(c.reason, 'OtherFieldManager');
    assert.match(c.message, /kim-bootstrapper wrote/);

    await new Promise((r) => setTimeout(r, 1_100));
    assert.ok(running.resync('rt'));
    await eventually(
      async () => {
        await markDeploymentAvailable(rt()).catch(() => undefined);
        return condition(await readRb(), 'ExclusivelyManaged')?.status === 'True' ? true : undefined;
      },
      30_000,
      'ExclusivelyManaged True once KIM no longer writes',
    );
  });
});
