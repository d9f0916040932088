/**
 * KIM installs our release over a running upstream install on a real node, as its installer code
 * does, while Pods are created through the API server every 300 ms from before our manifests are
 * applied until our rollout is complete and upstream's CA has left the caBundle: every Pod is
 * admitted, mutated exactly once, none twice, and the API server never fails open.
 *
 * Upstream's objects are its release's (test/fixtures/upstream/install.yaml); its webhook Pod is a
 * stand-in that serves as upstream's does: the `rtb` image with the certificate files from Secret
 * `rt-bootstrapper-webhook-cert` (what Gardener's cert-management would issue) mounted at
 * controller-runtime's default folder, and that CA in the registration's caBundle.
 */
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  type KubernetesObject,
  type V1Container,
  type V1Deployment,
  type V1Pod,
} from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { test } from 'node:test';
import { stringify } from 'yaml';
import {
  MUTATING_WEBHOOK_CONFIGURATION,
  RUNTIME_NAMESPACE,
  WEBHOOK_SERVICE_ACCOUNT,
  webhookServiceDnsNames,
} from '../../src/api/runtime-names.js';
import { eventually } from '../../src/envtest/eventually.js';
import { ensureCrds } from '../../src/kube/crd.js';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';
import { parseCertificates } from '../../src/pki/pem-certificates.js';
import { renderKimManifests } from '../../src/render/kim-manifests.js';
import { packageVersion } from '../../src/version.js';
import {
  FOREIGN_SERVER_SELECTOR,
  foreignServersAmong,
} from '../../src/webhook/serving-cert/foreign-servers.js';
import { apiServerMetric } from '../support/apiserver-metrics.js';
import { kimInstall, kimStatus } from '../support/kim-installer.js';
import {
  gardenerCertManagementCrds,
  UPSTREAM_NAMESPACES,
  upstreamInstall,
} from '../support/upstream-install.js';
import { useNodeLandscape, type NodeLandscape } from './support/node-landscape.js';
import { POD_READY_MS } from './support/pods.js';
import { configureRuntime, e2eSources, webhookAvailable } from './support/webhook-on-node.js';

const CERT_DIR = '/tmp/k8s-webhook-server/serving-certs';
const NAMESPACE = 'takeover';
/** Pods are bound to a node that does not exist: admitted and stored, never run. */
const NOWHERE = 'no-such-node';
const EVERY_MS = 300;

let upstreamCaPem = '';
const landscape = useNodeLandscape(async (l) => {
  const kc = l.plane.cluster('runtime').kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  for (const name of UPSTREAM_NAMESPACES) await core.createNamespace({ body: { metadata: { name } } });
  await ensureCrds(kc, gardenerCertManagementCrds());
  // What cert-management would have issued for upstream's Certificate.
  const ca = await createCertificateAuthority({ commonName: 'upstream cert-management' });
  const leaf = await issueCertificate(ca, {
    commonName: 'rt-bootstrapper-webhook-service.kyma-system.svc',
    dnsNames: webhookServiceDnsNames(RUNTIME_NAMESPACE),
    usage: 'server',
  });
  upstreamCaPem = ca.certPem;
  await core.createNamespacedSecret({
    namespace: RUNTIME_NAMESPACE,
    body: {
      metadata: { name: 'rt-bootstrapper-webhook-cert' },
      type: 'kubernetes.io/tls',
      stringData: { 'tls.crt': leaf.certPem, 'tls.key': leaf.keyPem, 'ca.crt': ca.certPem },
    },
  });
  await kimInstall(kc, upstreamText(l, ca.certPem));
  const { sources } = await e2eSources(l);
  await configureRuntime(kc, sources);
  await webhookAvailable(kc);
  await core.createNamespace({
    body: { metadata: { name: NAMESPACE, annotations: { 'rt-cfg.kyma-project.io/all': 'true' } } },
  });
  await eventually(
    () => core.readNamespacedServiceAccount({ name: 'default', namespace: NAMESPACE }),
    60_000,
    'the default ServiceAccount of the test namespace',
  );
});

/**
 * Upstream's release as KIM held it, its webhook Pod the stand-in, its registration trusting
 * `caPem`; plus a binding that lets the stand-in do what upstream's manager does without
 * reproducing upstream's RBAC (the release's own is applied too).
 */
function upstreamText(l: NodeLandscape, caPem: string): string {
  const objects = upstreamInstall().map((o): object => {
    if (o.kind === 'Deployment') return standIn(o, l.openImage);
    if (o.kind === 'MutatingWebhookConfiguration') {
      const mwc = o as KubernetesObject & { webhooks: { clientConfig: Record<string, unknown> }[] };
      const caBundle = Buffer.from(caPem).toString('base64');
      return {
        ...mwc,
        webhooks: mwc.webhooks.map((w) => ({ ...w, clientConfig: { ...w.clientConfig, caBundle } })),
      };
    }
    return o;
  });
  const admin = {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: { name: 'upstream-stand-in' },
    roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'cluster-admin' },
    subjects: [{ kind: 'ServiceAccount', name: WEBHOOK_SERVICE_ACCOUNT, namespace: RUNTIME_NAMESPACE }],
  };
  return [...objects, admin].map((o) => `---\n${stringify(o, { lineWidth: 0 })}`).join('');
}

/** Upstream's Deployment serving from its mounted certificate, as controller-runtime does. */
function standIn(o: KubernetesObject, image: string): V1Deployment {
  const d = o as V1Deployment;
  const spec = d.spec!;
  const template = spec.template;
  const containers = (template.spec?.containers ?? []).map((c): V1Container => ({
    ...c,
    image,
    command: ['rtb'],
    args: [
      'webhook',
      '--port=9443',
      `--tls-cert=${CERT_DIR}/tls.crt`,
      `--tls-key=${CERT_DIR}/tls.key`,
      `--config-map=${RUNTIME_NAMESPACE}/rt-bootstrapper-config`,
      '--no-trust-restart',
    ],
    livenessProbe: { httpGet: { path: '/healthz', port: 9443, scheme: 'HTTPS' } },
    readinessProbe: { httpGet: { path: '/readyz', port: 9443, scheme: 'HTTPS' }, periodSeconds: 2 },
    resources: { limits: { memory: '256Mi' }, requests: { cpu: '10m', memory: '64Mi' } },
  }));
  return { ...d, spec: { ...spec, template: { ...template, spec: { ...template.spec!, containers } } } };
}

/** What a Pod created during the takeover came back as. */
interface Created {
  readonly name: string;
  readonly at: number;
  readonly pod?: V1Pod;
  readonly error?: string;
  /** Whether a Pod of upstream's stand-in still existed when it was created. */
  readonly upstreamAround: boolean;
}

/** Why this stored Pod is not mutated exactly once (undefined: it is). */
function onceProblem(pod: V1Pod): string | undefined {
  if (pod.metadata?.annotations?.['rt-bootstrapper.kyma-project.io/modified'] !== 'true')
    return 'not mutated';
  const spec = pod.spec!;
  const secrets = (spec.imagePullSecrets ?? []).filter((s) => s.name === 'registry-credentials');
  if (secrets.length !== 1) return `${secrets.length} pull Secret references`;
  const volumes = (spec.volumes ?? []).filter((v) => v.name === 'rt-bootstrapper-certs');
  if (volumes.length !== 1) return `${volumes.length} trust-bundle volumes`;
  for (const c of spec.containers) {
    const names = (c.env ?? []).map((e) => e.name);
    if (new Set(names).size !== names.length) return `container ${c.name}: an env variable twice`;
    if (!names.includes('KYMA_FIPS_MODE_ENABLED')) return `container ${c.name}: no FIPS variable`;
    const mounts = (c.volumeMounts ?? []).filter((m) => m.name === 'rt-bootstrapper-certs');
    if (mounts.length !== 1) return `container ${c.name}: ${mounts.length} trust-bundle mounts`;
    if (c.image === undefined || c.image.startsWith('replace.me/'))
      return `container ${c.name}: image ${c.image ?? ''} not rewritten`;
  }
  return undefined;
}

test('KIM installs our release over a serving upstream install: no Pod unmutated, none mutated twice, no call failed open', async () => {
  const l = landscape();
  const cluster = l.plane.cluster('runtime');
  const kc = cluster.kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  const admission = kc.makeApiClient(AdmissionregistrationV1Api);
  const failOpen = (): Promise<number> =>
    apiServerMetric(cluster, 'apiserver_admission_webhook_fail_open_count', { name: 'mpod-v1.kb.io' });
  const upstreamPods = async (): Promise<V1Pod[]> =>
    (await core.listNamespacedPod({ namespace: RUNTIME_NAMESPACE, labelSelector: FOREIGN_SERVER_SELECTOR }))
      .items;
  const bundleFingerprints = async (): Promise<string[]> => {
    const mwc = await admission.readMutatingWebhookConfiguration({ name: MUTATING_WEBHOOK_CONFIGURATION });
    const b64 = mwc.webhooks?.[0]?.clientConfig.caBundle ?? '';
    return parseCertificates(Buffer.from(b64, 'base64').toString('utf8')).certificates.map(
      (c) => c.fingerprint,
    );
  };
  const upstreamFp = parseCertificates(upstreamCaPem).certificates[0]!.fingerprint;
  assert.equal((await upstreamPods()).length, 1, "upstream's stand-in serves");
  const failOpenBefore = await failOpen();

  // Pods every 300 ms, from before our manifests until the takeover is complete.
  const created: Created[] = [];
  let upstreamAround = true;
  const done = new AbortController();
  const creator = (async () => {
    for (let i = 0; !done.signal.aborted; i++) {
      const name = `p-${i}`;
      const at = Date.now();
      const around = upstreamAround;
      try {
        const pod = await core.createNamespacedPod({
          namespace: NAMESPACE,
          body: {
            metadata: { name },
            spec: {
              nodeName: NOWHERE,
              containers: [{ name: 'c', image: 'replace.me/pause:1' }],
              initContainers: [{ name: 'i', image: 'replace.me/pause:1' }],
            },
          },
        });
        created.push({ name, at, pod, upstreamAround: around });
      } catch (error) {
        created.push({ name, at, error: String(error), upstreamAround: around });
      }
      await sleep(Math.max(0, EVERY_MS - (Date.now() - at)));
    }
  })();

  try {
    await sleep(3_000);
    const ours = renderKimManifests({ image: l.openImage, version: packageVersion() }).text;
    await kimInstall(kc, ours);
    // Upstream's CA stays while its Pod may serve.
    const early: string[] = [];
    await eventually(
      async () => {
        // A Pod that ended (its container exited; kubelet sets the phase before the object goes) serves no more.
        upstreamAround = foreignServersAmong(await upstreamPods());
        const fps = await bundleFingerprints();
        if (upstreamAround && !fps.includes(upstreamFp)) early.push(new Date().toISOString());
        return !upstreamAround && !fps.includes(upstreamFp) && fps.length > 0 ? true : undefined;
      },
      POD_READY_MS * 2,
      "our rollout to replace upstream's Pod and upstream's CA to leave the caBundle",
      500,
    );
    assert.deepEqual(early, [], "upstream's CA never left while its Pod still existed");
    await webhookAvailable(kc);
    assert.equal(await kimStatus(kc, ours), 'Ready');
    await sleep(3_000);
  } finally {
    done.abort();
    await creator;
  }

  const errors = created.filter((c) => c.error !== undefined);
  assert.deepEqual(errors, [], 'every create was admitted');
  const problems = created.flatMap((c) => {
    const why = c.pod ? onceProblem(c.pod) : 'no Pod';
    return why ? [`${c.name} (${new Date(c.at).toISOString()}): ${why}`] : [];
  });
  assert.deepEqual(problems, [], 'every Pod mutated exactly once');
  assert.ok(created.filter((c) => c.upstreamAround).length >= 10, 'Pods were created while upstream served');
  assert.ok(created.filter((c) => !c.upstreamAround).length >= 5, 'and after it was gone');
  assert.equal((await failOpen()) - failOpenBefore, 0, 'the API server never failed open');
  console.log(
    `takeover: ${created.length} Pods, ${created.filter((c) => c.upstreamAround).length} while upstream's Pod existed, all mutated once`,
  );
});
