// The fleet benchmark's same-run floors: what a rotation, an onboarding and a restart must do at
// least, done from the benchmark process with raw requests at the controller's concurrency. Each
// figure of the controller is printed next to its floor (bench/fleet-scale.ts).
import type { KubernetesObject } from '@kubernetes/client-node';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parse } from 'yaml';
import { RUNTIME_NAMESPACE, WEBHOOK_DEPLOYMENT, WEBHOOK_TLS_SECRET } from '../../src/api/runtime-names.js';
import { planWebhook, type WebhookRelease } from '../../src/controller/direct/runtime-manifests.js';
import { liteFromDocument } from '../../src/kube/cluster-access.js';
import { objectPath } from '../../src/kube/resource-path.js';
import { trustBundleApis } from '../../src/kube/trust-bundle-discovery.js';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';
import { MUTATING, VALIDATING } from '../../src/serving-cert/webhook-configurations.js';
import { CTB_NAME } from '../../test/support/kcp.js';
import { applyKeepAlive, baselineObjects } from './baseline-writes.js';
import type { GroupCpuWindow } from './cpu-groups.js';
import type { Fleet } from './fleet-landscape.js';
import type { BaselineFigures } from './fleet-summary.js';
import { domainOf, RB_PATH } from './kcp-bench.js';
import { KeepAliveClient } from './keep-alive-client.js';
import { forEachLimited } from './limited.js';

/** What a floor is given: the fleet, the KCP client, and the controller's concurrency. */
export interface FloorContext {
  readonly fleet: Fleet;
  readonly kcpClient: KeepAliveClient;
  readonly concurrency: number;
  /** Where kubeconfigs' relative paths resolve (none of the fleet's have any). */
  readonly dir: string;
  /** The machine's CPU by process group over a floor, as the controller's windows measure it. */
  readonly cpuWindow: () => GroupCpuWindow;
}

/** Times `perRuntime` over every runtime of the fleet at the controller's concurrency. */
async function timed(
  c: FloorContext,
  requestsPerRuntime: number,
  perRuntime: (id: string) => Promise<void>,
): Promise<BaselineFigures> {
  const loop = monitorEventLoopDelay({ resolution: 10 });
  loop.enable();
  const window = c.cpuWindow();
  const cpu0 = process.cpuUsage();
  const t0 = performance.now();
  await forEachLimited(c.fleet.ids, c.concurrency, perRuntime);
  const ms = performance.now() - t0;
  const cpu = process.cpuUsage(cpu0);
  loop.disable();
  return {
    ms,
    cpuPerRuntimeMs: (cpu.user + cpu.system) / 1000 / c.fleet.ids.length,
    requestsPerRuntime,
    loopP99Ms: loop.percentile(99) / 1e6,
    cpu: window.close(),
  };
}

/** A client of runtime `id` made from its kubeconfig, as a process that never talked to it would. */
async function freshClient(c: FloorContext, id: string): Promise<KeepAliveClient> {
  const access = liteFromDocument(parse(c.fleet.kubeconfigs.get(id) ?? ''), c.dir);
  if (!access) throw new Error(`the kubeconfig of ${id} is not a plain one`);
  return KeepAliveClient.create(access, 1);
}

const statusPatch = (c: FloorContext, id: string): Promise<string> =>
  c.kcpClient.request(
    'PATCH',
    `${RB_PATH}/${id}/status`,
    { status: { appliedAt: new Date().toISOString() } },
    'application/merge-patch+json',
  );

/**
 * The floors' copies of the set: the spec of the landscape's ClusterTrustBundle on the KCP, at the
 * version the KCP serves (every cluster of the fleet runs the same minor).
 */
async function floorSources(c: FloorContext, label: string): Promise<KubernetesObject[]> {
  const api = await trustBundleApis.get(c.fleet.kcpAccess);
  if (!api.served) throw new Error(`the KCP serves no ClusterTrustBundle API: ${api.found}`);
  const path = `${api.path}/${encodeURIComponent(CTB_NAME)}`;
  const spec = (JSON.parse(await c.kcpClient.request('GET', path)) as { spec: unknown }).spec;
  return baselineObjects(label, spec, api.apiVersion);
}

/** The kind of the runtime object a rotation of `source` (as bench/fleet-scale.ts names it) changes. */
export function kindOfSource(source: string): string {
  if (source.startsWith('pull Secret')) return 'Secret';
  if (source.startsWith('ClusterTrustBundle')) return 'ClusterTrustBundle';
  return 'ConfigMap';
}

/**
 * The rotation's floor: the minimal writes of a change of one source, the changed object written
 * to every runtime (a copy under another name, the same content) and one status write per CR,
 * over keep-alive connections with one TLS context per identity, new connections each round
 * (resuming the last round's TLS session, as the controller's do). With `cold`, each runtime's TLS
 * context is made again from its parsed kubeconfig inside the round, as the controller must after
 * it let the context go (`RUNTIME_TLS_IDLE_MS` unused); the new client keeps the session and
 * replaces the old one in `clients`.
 */
export async function rotationFloor(
  c: FloorContext,
  clients: Map<string, KeepAliveClient>,
  label: string,
  source: string,
  cold: boolean,
): Promise<BaselineFigures> {
  const kind = kindOfSource(source);
  const objects = (await floorSources(c, label)).filter((o) => o.kind === kind);
  for (const client of clients.values()) client.disconnect();
  c.kcpClient.disconnect();
  // The apply and the status write.
  return timed(c, objects.length + 1, async (id) => {
    let client = clients.get(id);
    if (!client) throw new Error(`no client for ${id}`);
    if (cold) {
      client = await client.remade();
      clients.set(id, client);
    }
    await applyKeepAlive(client, objects);
    await statusPatch(c, id);
  });
}

/** Suffix of the floor's copies: the controller's objects stay the controller's alone. */
const FLOOR_SUFFIX = '-bench-floor';

/** A copy of `o` under another name; a webhook configuration's copy matches no object at all. */
function floorCopy(o: KubernetesObject): KubernetesObject {
  if (o.kind === 'Namespace') return o;
  const copy = structuredClone(o) as KubernetesObject & { webhooks?: Record<string, unknown>[] };
  copy.metadata = { ...copy.metadata, name: `${copy.metadata?.name ?? ''}${FLOOR_SUFFIX}` };
  for (const w of copy.webhooks ?? []) w.objectSelector = { matchLabels: { 'rtb-bench-floor': 'never' } };
  return copy;
}

/**
 * The onboarding's floor: per runtime what an install cannot do without, from a process that has
 * no client of the runtime yet: a client from its kubeconfig, a drift client certificate issued
 * for it, the set and the webhook's objects applied (copies under other names, the same content
 * and order), one read of the Deployment (its readiness), one of the serving Secret and both
 * webhook configurations (the serving protocol's look), and two writes of the CR (the finalizer
 * and the status). The serving certificate is not issued: on the shared pool the controller, too,
 * issues it once per API server and finds it current for every other runtime there.
 */
export async function onboardingFloor(c: FloorContext, release: WebhookRelease): Promise<BaselineFigures> {
  const ca = await createCertificateAuthority({ commonName: 'bench floor CA' });
  const sources = await floorSources(c, 'onboarding');
  const reads = servingPaths();
  const deployment = objectPath({
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { namespace: RUNTIME_NAMESPACE, name: `${WEBHOOK_DEPLOYMENT}${FLOOR_SUFFIX}` },
  });
  const listenerUrl = 'https://listener.bench.invalid:8443';
  const shape = planWebhook(undefined, release, { drift: { listenerUrl } });
  const writes = sources.length + shape.webhook.length + shape.registration.length;
  c.kcpClient.disconnect();
  // The applies, the Deployment's read and the serving look, the CR's two writes.
  return timed(c, writes + 1 + reads.length + 2, async (id) => {
    const client = await freshClient(c, id);
    try {
      const issued = await issueCertificate(ca, {
        commonName: id,
        dnsNames: [domainOf(id)],
        usage: 'client',
        validityMs: 30 * 24 * 3600_000,
      });
      const plan = planWebhook(undefined, release, {
        drift: {
          listenerUrl,
          clientTls: { certPem: issued.certPem, keyPem: issued.keyPem, caPem: ca.certPem },
        },
      });
      await applyKeepAlive(client, [...sources, ...plan.webhook, ...plan.registration].map(floorCopy));
      await client.request('GET', deployment);
      for (const path of reads) await client.request('GET', path);
      await c.kcpClient.request(
        'PATCH',
        `${RB_PATH}/${id}`,
        { metadata: { annotations: { 'rtb-bench-floor': 'onboarding' } } },
        'application/merge-patch+json',
      );
      await statusPatch(c, id);
    } finally {
      client.close();
    }
  });
}

/** The serving protocol's reads: the serving Secret and both webhook configurations. */
function servingPaths(): string[] {
  const group = 'admissionregistration.k8s.io/v1';
  return [
    objectPath({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { namespace: RUNTIME_NAMESPACE, name: WEBHOOK_TLS_SECRET },
    }),
    objectPath({ apiVersion: group, kind: MUTATING.kind, metadata: { name: MUTATING.name } }),
    objectPath({ apiVersion: group, kind: VALIDATING.kind, metadata: { name: VALIDATING.name } }),
  ];
}

/**
 * The restart's floor: what a new process reads of each runtime, from a process that has no
 * client of it yet: a client from its kubeconfig (a new TLS context, a full handshake) and the
 * serving Secret and both webhook configurations, the look that tells whether the certificate
 * served still verifies against the registered caBundle.
 */
export async function restartFloor(c: FloorContext): Promise<BaselineFigures> {
  const reads = servingPaths();
  return timed(c, reads.length, async (id) => {
    const client = await freshClient(c, id);
    try {
      for (const path of reads) await client.request('GET', path);
    } finally {
      client.close();
    }
  });
}
