/**
 * KIM's runtime-bootstrapper installer, played exactly as KIM's code does it (DESIGN.md §8), so a
 * test can install our manifests the way today's landscapes do:
 * - configure: copy the ConfigMap (data only), the pull Secret (data and type) and the
 *   ClusterTrustBundle to the runtime, server-side apply with Force under `kim-bootstrapper`, only
 *   when the content differs;
 * - install: split `manifests.yaml` on `---`, decode each piece, skip pieces without `kind`, put a
 *   namespaced object without namespace into `default`, create it if missing, else server-side
 *   apply it with Force under `kim-bootstrapper`; never delete or prune;
 * - status: the Deployment's readiness and its `app.kubernetes.io/version` label against the first
 *   Deployment of the manifests.
 *
 * It spells KIM's names and its split itself rather than importing ours (runtime-names.ts,
 * splitAsKim): it stands for KIM, so a rename or a splitting rule of ours that KIM does not share
 * must make the KIM test fail, not follow along.
 */
import type { KubeConfig, KubernetesObject, V1Deployment } from '@kubernetes/client-node';
import { parse } from 'yaml';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { statusCodeOf } from '../../src/kube/kube-errors.js';

/** KIM's field manager on the runtime. */
const KIM_FIELD_MANAGER = 'kim-bootstrapper';
/** The Deployment KIM waits for (flag `--runtime-bootstrapper-skr-deployment-name`). */
const KIM_DEPLOYMENT = { namespace: 'kyma-system', name: 'rt-bootstrapper-controller-manager' };
const VERSION_LABEL = 'app.kubernetes.io/version';

/** KIM's installation states. */
export type KimInstallationStatus = 'NotStarted' | 'InProgress' | 'Ready' | 'UpgradeNeeded' | 'Failed';

interface ApiResource {
  readonly name: string;
  readonly kind: string;
  readonly namespaced: boolean;
}

const discovery = new WeakMap<KubeConfig, Map<string, Promise<readonly ApiResource[]>>>();

// KIM maps kinds to resources through discovery (a RESTMapper); so does this.
async function resourceFor(kc: KubeConfig, apiVersion: string, kind: string): Promise<ApiResource> {
  let perConfig = discovery.get(kc);
  if (!perConfig) {
    perConfig = new Map();
    discovery.set(kc, perConfig);
  }
  let list = perConfig.get(apiVersion);
  if (!list) {
    const path = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
    list = kubeRequest<{ resources: ApiResource[] }>(kc, { method: 'GET', path }).then((r) =>
      r.resources.filter((res) => !res.name.includes('/')),
    );
    perConfig.set(apiVersion, list);
  }
  const found = (await list).find((r) => r.kind === kind);
  if (!found) throw new Error(`no REST mapping for ${kind} in ${apiVersion}`);
  return found;
}

async function objectPath(
  kc: KubeConfig,
  o: KubernetesObject,
): Promise<{ collection: string; item: string }> {
  const apiVersion = o.apiVersion ?? '';
  const res = await resourceFor(kc, apiVersion, o.kind ?? '');
  const base = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  const collection = res.namespaced
    ? `${base}/namespaces/${o.metadata?.namespace ?? 'default'}/${res.name}`
    : `${base}/${res.name}`;
  return { collection, item: `${collection}/${o.metadata?.name ?? ''}` };
}

/** Creates the object if it is missing, else server-side applies it with Force (KIM's applyObject). */
async function createOrForceApply(kc: KubeConfig, o: KubernetesObject): Promise<void> {
  const { collection, item } = await objectPath(kc, o);
  try {
    await kubeRequest(kc, { method: 'GET', path: item });
  } catch (error) {
    if (statusCodeOf(error) !== 404) throw error;
    await kubeRequest(kc, { method: 'POST', path: collection, body: o });
    return;
  }
  await forceApply(kc, o);
}

async function forceApply(kc: KubeConfig, o: KubernetesObject): Promise<void> {
  const { item } = await objectPath(kc, o);
  await kubeRequest(kc, {
    method: 'PATCH',
    path: item,
    query: { fieldManager: KIM_FIELD_MANAGER, force: true },
    contentType: 'application/apply-patch+yaml',
    body: o,
  });
}

/** KIM's decoding of `manifests.yaml`: split on `---`, skip pieces without `kind`, default namespaces. */
export async function kimDocuments(kc: KubeConfig, manifests: string): Promise<KubernetesObject[]> {
  const out: KubernetesObject[] = [];
  for (const piece of manifests.split('---')) {
    const o = parse(piece) as KubernetesObject | null;
    if (o === null || typeof o !== 'object' || !o.kind) continue;
    const res = await resourceFor(kc, o.apiVersion ?? '', o.kind);
    const metadata = { ...o.metadata };
    if (res.namespaced) metadata.namespace ??= 'default';
    else delete metadata.namespace;
    out.push({ ...o, metadata });
  }
  return out;
}

/** KIM's Install: every document of `manifests.yaml`, in order. */
export async function kimInstall(runtime: KubeConfig, manifests: string): Promise<void> {
  for (const o of await kimDocuments(runtime, manifests)) await createOrForceApply(runtime, o);
}

/** The source objects KIM copies, as read from the KCP. */
export interface KimSources {
  /** `kcp-system/rt-bootstrapper-config`. */
  readonly configMapData: Readonly<Record<string, string>>;
  /** The pull Secret: type and data (base64). */
  readonly pullSecret?: { readonly type: string; readonly data: Readonly<Record<string, string>> };
  /** The ClusterTrustBundle's spec, and the name it gets on the runtime. */
  readonly clusterTrustBundle?: { readonly name: string; readonly spec: Readonly<Record<string, unknown>> };
}

/** KIM's Configure: copies the sources, applying only what differs from the runtime's copy. */
export async function kimConfigure(runtime: KubeConfig, sources: KimSources): Promise<void> {
  // A copy is the same as the runtime's when the members KIM copies are (absent reads as {}).
  const copy = (o: Record<string, unknown>, copied: readonly string[]) => ({
    o: o as KubernetesObject,
    same: (c: Record<string, unknown>) =>
      copied.every((k) => JSON.stringify(c[k] ?? {}) === JSON.stringify(o[k] ?? {})),
  });
  const copies = [
    copy(
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'rt-bootstrapper-config', namespace: 'kyma-system' },
        data: sources.configMapData,
      },
      ['data'],
    ),
  ];
  const s = sources.pullSecret;
  if (s) {
    const metadata = { name: 'registry-credentials', namespace: 'kyma-system' };
    copies.push(
      copy({ apiVersion: 'v1', kind: 'Secret', metadata, type: s.type, data: s.data }, ['type', 'data']),
    );
  }
  const b = sources.clusterTrustBundle;
  if (b) {
    const apiVersion = 'certificates.k8s.io/v1beta1';
    copies.push(
      copy({ apiVersion, kind: 'ClusterTrustBundle', metadata: { name: b.name }, spec: b.spec }, ['spec']),
    );
  }
  for (const { o, same } of copies) {
    const { item } = await objectPath(runtime, o);
    let current: Record<string, unknown> | undefined;
    try {
      current = await kubeRequest<Record<string, unknown>>(runtime, { method: 'GET', path: item });
    } catch (error) {
      if (statusCodeOf(error) !== 404) throw error;
    }
    if (current !== undefined && same(current)) continue;
    await forceApply(runtime, o);
  }
}

/** The version label of the first Deployment in the manifests (what KIM compares). */
export function manifestsVersion(manifests: string): string | undefined {
  for (const piece of manifests.split('---')) {
    const o = parse(piece) as V1Deployment | null;
    if (o?.kind === 'Deployment') return o.metadata?.labels?.[VERSION_LABEL];
  }
  return undefined;
}

/** KIM's InstallationInfo: the state of the install on the runtime. */
export async function kimStatus(runtime: KubeConfig, manifests: string): Promise<KimInstallationStatus> {
  let d: V1Deployment;
  try {
    d = await kubeRequest<V1Deployment>(runtime, {
      method: 'GET',
      path: `/apis/apps/v1/namespaces/${KIM_DEPLOYMENT.namespace}/deployments/${KIM_DEPLOYMENT.name}`,
    });
  } catch (error) {
    if (statusCodeOf(error) === 404) return 'NotStarted';
    throw error;
  }
  const condition = (type: string): boolean =>
    (d.status?.conditions ?? []).some((c) => c.type === type && c.status === 'True');
  const ready = (d.status?.readyReplicas ?? 0) >= (d.spec?.replicas ?? 1) && condition('Available');
  if (ready) {
    return d.metadata?.labels?.[VERSION_LABEL] === manifestsVersion(manifests) ? 'Ready' : 'UpgradeNeeded';
  }
  return condition('Progressing') ? 'InProgress' : 'Failed';
}
