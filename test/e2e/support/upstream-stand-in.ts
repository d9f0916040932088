/**
 * Upstream's install serving on a real node, for the takeover tests: its release's objects
 * (test/fixtures/upstream/install.yaml, applied as KIM applied them) with its webhook Pod a
 * stand-in that serves as upstream's does: the `rtb` image with the certificate files from Secret
 * `rt-bootstrapper-webhook-cert` (what Gardener's cert-management would issue) mounted at
 * controller-runtime's default folder, and that CA in the registration's caBundle. And the
 * takeover's witness: Pods created through the API server every 300 ms, each checked as stored.
 */
import {
  AdmissionregistrationV1Api,
  CoreV1Api,
  type KubeConfig,
  type KubernetesObject,
  type V1Container,
  type V1Deployment,
  type V1Pod,
} from '@kubernetes/client-node';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { stringify } from 'yaml';
import {
  MUTATING_WEBHOOK_CONFIGURATION,
  MUTATING_WEBHOOK_NAME,
  RUNTIME_NAMESPACE,
  WEBHOOK_SERVICE_ACCOUNT,
  webhookServiceDnsNames,
} from '../../../src/api/runtime-names.js';
import type { LocalCluster } from '../../../src/envtest/control-plane.js';
import { eventually } from '../../../src/envtest/eventually.js';
import { ensureCrds } from '../../../src/kube/crd.js';
import { createCertificateAuthority } from '../../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../../src/pki/issue-certificate.js';
import { parseCertificates } from '../../../src/pki/pem-certificates.js';
import { FOREIGN_SERVER_SELECTOR, foreignServersAmong } from '../../../src/serving-cert/foreign-servers.js';
import { apiServerMetric } from '../../support/apiserver-metrics.js';
import { kimInstall, type KimSources } from '../../support/kim-installer.js';
import {
  gardenerCertManagementCrds,
  UPSTREAM_NAMESPACES,
  upstreamInstall,
} from '../../support/upstream-install.js';
import type { NodeLandscape } from './node-landscape.js';
import { configureRuntime, webhookAvailable } from './webhook-on-node.js';

const CERT_DIR = '/tmp/k8s-webhook-server/serving-certs';
/** The namespace the witness Pods are created in (every feature on by its annotation). */
const NAMESPACE = 'takeover';
/** Witness Pods are bound to a node that does not exist: admitted and stored, never run. */
const NOWHERE = 'no-such-node';
const EVERY_MS = 300;

/**
 * Installs upstream's release with the stand-in on the landscape's runtime, with `sources` copied
 * as KIM copies them beside it, and waits until it serves; returns upstream's CA (PEM).
 */
export async function installUpstreamStandIn(l: NodeLandscape, sources: KimSources): Promise<string> {
  const kc = l.plane.cluster('runtime').kubeConfig();
  const core = kc.makeApiClient(CoreV1Api);
  for (const name of UPSTREAM_NAMESPACES) await core.createNamespace({ body: { metadata: { name } } });
  await ensureCrds(kc, gardenerCertManagementCrds());
  const ca = await createCertificateAuthority({ commonName: 'upstream cert-management' });
  const leaf = await issueCertificate(ca, {
    commonName: 'rt-bootstrapper-webhook-service.kyma-system.svc',
    dnsNames: webhookServiceDnsNames(RUNTIME_NAMESPACE),
    usage: 'server',
  });
  await core.createNamespacedSecret({
    namespace: RUNTIME_NAMESPACE,
    body: {
      metadata: { name: 'rt-bootstrapper-webhook-cert' },
      type: 'kubernetes.io/tls',
      stringData: { 'tls.crt': leaf.certPem, 'tls.key': leaf.keyPem, 'ca.crt': ca.certPem },
    },
  });
  await kimInstall(kc, upstreamText(l, ca.certPem));
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
  return ca.certPem;
}

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

/** Why this stored Pod is not mutated exactly once (undefined: it is). */
function onceProblem(pod: V1Pod): string | undefined {
  if (pod.metadata?.annotations?.['rt-bootstrapper.kyma-project.io/modified'] !== 'true')
    return 'not mutated';
  const spec = pod.spec!;
  const secrets = (spec.imagePullSecrets ?? []).filter((s) => s.name === 'registry-credentials');
  if (secrets.length !== 1) return `${secrets.length} pull Secret references`;
  const volumes = (spec.volumes ?? []).filter((v) => v.name === 'rt-bootstrapper-certs');
  if (volumes.length !== 1) return `${volumes.length} trust-bundle volumes`;
  for (const c of [...spec.containers, ...(spec.initContainers ?? [])]) {
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

/** The takeover as seen from the runtime: upstream's Pods, its CA in the caBundle, fail-open calls. */
export class TakeoverWatch {
  private readonly core: CoreV1Api;
  private readonly admission: AdmissionregistrationV1Api;
  private readonly upstreamFp: string;

  constructor(
    private readonly cluster: LocalCluster,
    upstreamCaPem: string,
  ) {
    const kc: KubeConfig = cluster.kubeConfig();
    this.core = kc.makeApiClient(CoreV1Api);
    this.admission = kc.makeApiClient(AdmissionregistrationV1Api);
    this.upstreamFp = parseCertificates(upstreamCaPem).certificates[0]?.fingerprint ?? '';
  }

  /**
   * Whether a Pod of upstream's may still serve, as the caBundle's writer decides it: a Pod that
   * ended (its container exited; kubelet sets the phase before the object goes) serves no more.
   */
  async upstreamServes(): Promise<boolean> {
    const pods = await this.core.listNamespacedPod({
      namespace: RUNTIME_NAMESPACE,
      labelSelector: FOREIGN_SERVER_SELECTOR,
    });
    return foreignServersAmong(pods.items);
  }

  /** Fingerprints of the caBundle of our registration's entry. */
  async bundle(): Promise<{ readonly fingerprints: string[]; readonly upstream: boolean }> {
    const mwc = await this.admission.readMutatingWebhookConfiguration({
      name: MUTATING_WEBHOOK_CONFIGURATION,
    });
    const b64 = mwc.webhooks?.[0]?.clientConfig.caBundle ?? '';
    const fingerprints = parseCertificates(Buffer.from(b64, 'base64').toString('utf8')).certificates.map(
      (c) => c.fingerprint,
    );
    return { fingerprints, upstream: fingerprints.includes(this.upstreamFp) };
  }

  /** The API server's count of calls to our webhook entry that failed open. */
  failedOpen(): Promise<number> {
    return apiServerMetric(this.cluster, 'apiserver_admission_webhook_fail_open_count', {
      name: MUTATING_WEBHOOK_NAME,
    });
  }

  /**
   * Polls until upstream serves no more and its CA has left the caBundle; returns the times at
   * which its CA was missing while it still served (none, if the rule holds). `rolledOut` is
   * called once when our rollout is complete: no Pod of upstream's is left that is not being
   * deleted (the old ReplicaSet is scaled to zero).
   */
  async untilTakenOver(
    timeoutMs: number,
    stream: WitnessPods,
    rolledOut: () => Promise<void>,
  ): Promise<string[]> {
    const early: string[] = [];
    let done = false;
    await eventually(
      async () => {
        const pods = await this.core.listNamespacedPod({
          namespace: RUNTIME_NAMESPACE,
          labelSelector: FOREIGN_SERVER_SELECTOR,
        });
        const serves = foreignServersAmong(pods.items);
        stream.upstreamServes = serves;
        if (!done && pods.items.every((p) => p.metadata?.deletionTimestamp !== undefined)) {
          done = true;
          await rolledOut();
        }
        const b = await this.bundle();
        if (serves && !b.upstream) early.push(new Date().toISOString());
        return !serves && !b.upstream && b.fingerprints.length > 0 ? true : undefined;
      },
      timeoutMs,
      "upstream's Pods to go and its CA to leave the caBundle",
      500,
    );
    return early;
  }
}

/** What a witness Pod came back as. */
interface Created {
  readonly name: string;
  readonly at: number;
  readonly problem?: string;
  /** Whether a Pod of upstream's still served when it was created. */
  readonly whileUpstream: boolean;
}

/** Pods created every 300 ms until stopped, each checked as the API server stored it. */
export class WitnessPods {
  /** Set by whoever watches upstream's Pods; recorded with each Pod. */
  upstreamServes = true;
  private readonly created: Created[] = [];
  private readonly done = new AbortController();
  private readonly running: Promise<void>;

  constructor(private readonly core: CoreV1Api) {
    this.running = this.run();
  }

  /** Stops creating; returns the summary. */
  async stop(): Promise<{ count: number; whileUpstream: number; problems: string[] }> {
    this.done.abort();
    await this.running;
    return {
      count: this.created.length,
      whileUpstream: this.created.filter((c) => c.whileUpstream).length,
      problems: this.created.flatMap((c) =>
        c.problem === undefined ? [] : [`${c.name} (${new Date(c.at).toISOString()}): ${c.problem}`],
      ),
    };
  }

  private async run(): Promise<void> {
    for (let i = 0; !this.done.signal.aborted; i++) {
      const name = `p-${i}`;
      const at = Date.now();
      const whileUpstream = this.upstreamServes;
      let problem: string | undefined;
      try {
        const pod = await this.core.createNamespacedPod({
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
        problem = onceProblem(pod);
      } catch (error) {
        problem = `refused: ${String(error).split('\n')[0] ?? ''}`;
      }
      this.created.push({ name, at, whileUpstream, ...(problem === undefined ? {} : { problem }) });
      await sleep(Math.max(0, EVERY_MS - (Date.now() - at)));
    }
  }
}

/** The API server's last lines about failed webhook calls (its log in `clusterDir`), for a failure's report. */
export async function webhookCallFailures(clusterDir: string): Promise<string> {
  const log = await readFile(join(clusterDir, 'kube-apiserver.log'), 'utf8').catch(() => '');
  const lines = log.split('\n').filter((l) => /failed calling webhook|mpod-v1\.kb\.io/.test(l));
  return lines.slice(-15).join('\n');
}
