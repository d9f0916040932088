import { CoreV1Api, type KubeConfig, type KubernetesObject, type V1Pod } from '@kubernetes/client-node';
import { readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { request } from 'node:https';
import { join } from 'node:path';
import { parse } from 'yaml';
import { CONFIG_MAP_KEY, CONFIG_MAP_NAME, CONFIG_MAP_NAMESPACE } from '../../src/api/webhook-features.js';
import type { ControlPlane, LocalCluster } from '../../src/envtest/control-plane.js';
import { freePort } from '../../src/envtest/free-port.js';
import type { ManagedProcess } from '../../src/envtest/managed-process.js';
import { WEBHOOK_MALLOC_ENV, WEBHOOK_NODE_OPTIONS } from '../../src/render/webhook-deployment.js';
import { waitReady } from '../../src/envtest/wait-ready.js';
import { applyObjects } from '../../src/kube/apply.js';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';
import { ROOT, startNode, type ChildScripts } from './processes.js';

const fixture = (name: string): string => readFileSync(join(ROOT, 'test', 'fixtures', name), 'utf8');

/** The seed's webhook configuration (JSON text). */
export const seedConfigText = (): string => fixture('seed-config.json');

/** The seed example's Pod before the webhook. */
export const seedPod = (): V1Pod => parse(fixture('seed-pod-before.yaml')) as V1Pod;

/**
 * What a runtime holds for the webhook: namespace kyma-system, the pull Secret
 * `kyma-system/registry-credentials` and the ConfigMap with the seed configuration.
 */
export async function applyWebhookSources(kc: KubeConfig): Promise<void> {
  const sources: KubernetesObject[] = [
    { apiVersion: 'v1', kind: 'Namespace', metadata: { name: CONFIG_MAP_NAMESPACE } },
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: 'registry-credentials', namespace: CONFIG_MAP_NAMESPACE },
      type: 'kubernetes.io/dockerconfigjson',
      data: {
        '.dockerconfigjson': Buffer.from(
          JSON.stringify({ auths: { 'ghcr.io': { auth: 'YmVuY2g6YmVuY2g=' } } }),
        ).toString('base64'),
      },
    } as KubernetesObject,
    {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: { name: CONFIG_MAP_NAME, namespace: CONFIG_MAP_NAMESPACE },
      data: { [CONFIG_MAP_KEY]: seedConfigText() },
    } as KubernetesObject,
  ];
  await applyObjects(kc, sources);
}

/** A serving certificate for 127.0.0.1 and the CA that signed it, written to `dir`. */
export interface ServingTls {
  readonly caPem: string;
  readonly caFile: string;
  readonly certFile: string;
  readonly keyFile: string;
}

export async function writeServingTls(dir: string): Promise<ServingTls> {
  const ca = await createCertificateAuthority({ commonName: 'rtb bench webhook CA' });
  const serving = await issueCertificate(ca, {
    commonName: 'rt-bootstrapper-webhook',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const tls = {
    caPem: ca.certPem,
    caFile: join(dir, 'ca.crt'),
    certFile: join(dir, 'tls.crt'),
    keyFile: join(dir, 'tls.key'),
  };
  await writeFile(tls.caFile, ca.certPem);
  await writeFile(tls.certFile, serving.certPem);
  await writeFile(tls.keyFile, serving.keyPem, { mode: 0o600 });
  return tls;
}

/**
 * The cluster `name` of `plane` made ready for a webhook under test: its sources applied and a
 * serving certificate for 127.0.0.1 written to `dir`. Says which API server and etcd run.
 */
export async function prepareWebhookCluster(
  plane: ControlPlane,
  name: string,
  dir: string,
  say: (line: string) => void,
): Promise<{ cluster: LocalCluster; kc: KubeConfig; tls: ServingTls }> {
  const cluster = plane.cluster(name);
  say(`cluster: kube-apiserver ${plane.binaries.kubernetesVersion}, etcd ${plane.binaries.etcdVersion}`);
  const kc = cluster.kubeConfig();
  await applyWebhookSources(kc);
  return { cluster, kc, tls: await writeServingTls(dir) };
}

/** A server under test in its own process. */
export interface ServerProcess {
  readonly proc: ManagedProcess;
  readonly pid: number;
  /** `https://127.0.0.1:<port>/mutate` */
  readonly url: string;
}

/**
 * `rtb webhook` (compiled, plain node) against a cluster on a free loopback port; resolves once
 * `/readyz` answers 200 (configuration loaded, caches synced).
 */
export async function startWebhookProcess(
  scripts: ChildScripts,
  cluster: LocalCluster,
  tls: ServingTls,
  dir: string,
  nodeOptions: readonly string[] = [],
  extraArgs: readonly string[] = [],
  name = 'webhook',
): Promise<ServerProcess> {
  const port = await freePort();
  const proc = startNode(
    name,
    scripts.rtb,
    [
      'webhook',
      `--tls-cert=${tls.certFile}`,
      `--tls-key=${tls.keyFile}`,
      `--kubeconfig=${cluster.kubeconfigPath}`,
      '--host=127.0.0.1',
      `--port=${port}`,
      '--log-level=info',
      ...extraArgs,
    ],
    dir,
    // As the rendered Deployment runs it.
    [...WEBHOOK_NODE_OPTIONS.split(' '), ...nodeOptions],
    WEBHOOK_MALLOC_ENV,
  );
  await waitReady(proc, `https://127.0.0.1:${port}/readyz`, { ca: tls.caPem }, 60_000);
  return { proc, pid: pidOf(proc), url: `https://127.0.0.1:${port}/mutate` };
}

/** The bare baseline server in its own process, answering `response` to every POST. */
export async function startBareServer(
  scripts: ChildScripts,
  tls: ServingTls,
  responseFile: string,
  dir: string,
  echoUid = false,
): Promise<ServerProcess> {
  const port = await freePort();
  const args = [tls.certFile, tls.keyFile, responseFile, String(port), ...(echoUid ? ['echo-uid'] : [])];
  const proc = startNode('bare-server', scripts.bareServer, args, dir);
  await waitReady(proc, `https://127.0.0.1:${port}/healthz`, { ca: tls.caPem }, 30_000);
  return { proc, pid: pidOf(proc), url: `https://127.0.0.1:${port}/mutate` };
}

function pidOf(proc: ManagedProcess): number {
  if (proc.pid === undefined) throw new Error(`${proc.name} is not running`);
  return proc.pid;
}

/**
 * The seed example's Pod as the API server hands it to a mutating webhook: defaulted (taken
 * from a dry-run create on the cluster), without the fields set only after admission.
 */
export async function defaultedSeedPod(kc: KubeConfig, name = 'pause-test1'): Promise<V1Pod> {
  const core = kc.makeApiClient(CoreV1Api);
  const pod = seedPod();
  pod.metadata = { ...pod.metadata, name };
  const dry = await core.createNamespacedPod({ namespace: 'default', body: pod, dryRun: 'All' });
  const plain = JSON.parse(JSON.stringify(dry)) as V1Pod;
  if (plain.metadata) {
    delete plain.metadata.uid;
    delete plain.metadata.creationTimestamp;
    delete plain.metadata.resourceVersion;
  }
  plain.status = {};
  return plain;
}

/** An `admission.k8s.io/v1` AdmissionReview for creating `pod` (in namespace default), like the API server's. */
export function admissionReviewFor(
  pod: V1Pod,
  uid = '705ab4f5-6393-11e8-b7cc-42010a800002',
  namespace = 'default',
): string {
  return JSON.stringify({
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid,
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      requestKind: { group: '', version: 'v1', kind: 'Pod' },
      requestResource: { group: '', version: 'v1', resource: 'pods' },
      name: pod.metadata?.name,
      namespace,
      operation: 'CREATE',
      userInfo: { username: 'kubernetes-admin', groups: ['system:masters', 'system:authenticated'] },
      object: pod,
      oldObject: null,
      dryRun: false,
      options: { kind: 'CreateOptions', apiVersion: 'meta.k8s.io/v1' },
    },
  });
}

/** One POST over HTTPS; resolves with the status code and the body. */
export function post(url: string, body: string, caPem: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: 'POST',
        ca: caPem,
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
        });
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The JSON patch of an AdmissionReview response, or throws when the answer is not a mutation. */
export function patchOf(responseBody: string): { op: string; path: string }[] {
  const review = JSON.parse(responseBody) as {
    response?: { allowed?: boolean; patchType?: string; patch?: string; warnings?: string[] };
  };
  const r = review.response;
  if (r?.allowed !== true || r.patchType !== 'JSONPatch' || !r.patch) {
    throw new Error(`the webhook did not mutate the seed Pod: ${responseBody}`);
  }
  return JSON.parse(Buffer.from(r.patch, 'base64').toString('utf8')) as { op: string; path: string }[];
}
