// Tampering with the set the KCP keeps on a runtime, timed until a watch on the runtime delivers
// the restored object: what the drift-repair and hostile-runtime benchmarks share. Cycles through
// an edit of the pull Secret's data, an edit of the ConfigMap's data and a deletion of the
// ClusterTrustBundle.
import type { KubernetesObject, V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import type { ClusterTrustBundle } from '../../src/api/cluster-trust-bundle.js';
import type { LocalCluster } from '../../src/envtest/control-plane.js';
import { trustBundleApis } from '../../src/kube/trust-bundle-discovery.js';
import { CTB_NAME, dockerConfig } from '../../test/support/kcp.js';
import { KeepAliveClient } from './keep-alive-client.js';
import { ObjectWatch, type SeenEvent } from './object-watch.js';

export const TAMPER_KINDS = ['Secret edit', 'ConfigMap edit', 'ClusterTrustBundle delete'] as const;
export type TamperKind = (typeof TAMPER_KINDS)[number];
const SECRET_PATH = '/api/v1/namespaces/kyma-system/secrets/registry-credentials';
const CM_PATH = '/api/v1/namespaces/kyma-system/configmaps/rt-bootstrapper-config';
const CM_KEY = 'rt-bootstrapper-config.json';

/** The kind of object each tamper changes, as the controller logs a drift report's kind. */
export const KIND_OF: Readonly<Record<TamperKind, string>> = {
  'Secret edit': 'Secret',
  'ConfigMap edit': 'ConfigMap',
  'ClusterTrustBundle delete': 'ClusterTrustBundle',
};

/** One tamper. */
export interface TamperSample {
  readonly runtime: string;
  readonly kind: TamperKind;
  /** Wall-clock time (ms since the epoch) the tamper was issued, to match the controller's log. */
  readonly issuedAt: number;
  /** From issuing the tamper until the restored object's watch event arrived; undefined if never. */
  readonly repairMs: number | undefined;
  /** The tamper request itself (the API server calls the drift webhook before persisting it). */
  readonly writeMs: number;
  /** From the tamper's own watch event until the restored one. */
  readonly afterPersistMs: number | undefined;
  readonly failure?: string;
}

/** A runtime whose set is watched, with the values the KCP wrote there. */
export interface TamperTarget {
  readonly cluster: LocalCluster;
  readonly client: KeepAliveClient;
  readonly secret: ObjectWatch<V1Secret>;
  readonly configMap: ObjectWatch<V1ConfigMap>;
  readonly bundle: ObjectWatch<ClusterTrustBundle>;
  /** The bundles' collection at the version the runtime serves. */
  readonly bundlePath: string;
  readonly original: { readonly secret: string; readonly configMap: string; readonly bundle: string };
}

/** Watches the set on `cluster` (already installed there) and records its current values. */
export async function watchSet(cluster: LocalCluster): Promise<TamperTarget> {
  const kc = cluster.kubeConfig();
  const secret = new ObjectWatch<V1Secret>(
    kc,
    '/api/v1/namespaces/kyma-system/secrets',
    'registry-credentials',
  );
  const configMap = new ObjectWatch<V1ConfigMap>(
    kc,
    '/api/v1/namespaces/kyma-system/configmaps',
    'rt-bootstrapper-config',
  );
  const ctbApi = await trustBundleApis.get(kc);
  if (!ctbApi.served) throw new Error(`${cluster.name} serves no ClusterTrustBundle API: ${ctbApi.found}`);
  const bundle = new ObjectWatch<ClusterTrustBundle>(kc, ctbApi.path, CTB_NAME);
  for (const w of [secret, configMap, bundle]) await w.start();
  const first = async <T extends KubernetesObject>(w: ObjectWatch<T>): Promise<T> => {
    const e = await w.waitFor(0, () => true, 10_000);
    if (!e) throw new Error(`no initial event for ${cluster.name}`);
    return e.event.object;
  };
  const original = {
    secret: (await first(secret)).data?.['.dockerconfigjson'] ?? '',
    configMap: (await first(configMap)).data?.[CM_KEY] ?? '',
    bundle: (await first(bundle)).spec.trustBundle,
  };
  return {
    cluster,
    client: await KeepAliveClient.create(kc),
    secret,
    configMap,
    bundle,
    bundlePath: ctbApi.path,
    original,
  };
}

/** Stops the watches and closes the client of a target. */
export function unwatchSet(t: TamperTarget): void {
  for (const w of [t.secret, t.configMap, t.bundle]) w.stop();
  t.client.close();
}

/**
 * One tamper on one runtime, timed from issuing it until the watch delivers the restored object.
 * `afterWrite`, when given, runs once the tamper was written (a drift report standing in for the
 * runtime's drift webhook); its time counts.
 */
export async function tamper(
  r: TamperTarget,
  kind: TamperKind,
  n: number,
  timeoutMs: number,
  afterWrite?: () => Promise<unknown>,
): Promise<TamperSample> {
  const name = r.cluster.name;
  let watch: ObjectWatch<KubernetesObject>;
  let isTampered: (e: SeenEvent<KubernetesObject>) => boolean;
  let isRestored: (e: SeenEvent<KubernetesObject>) => boolean;
  let write: () => Promise<unknown>;
  if (kind === 'Secret edit') {
    watch = r.secret;
    const data = (e: SeenEvent<KubernetesObject>): string | undefined =>
      (e.object as V1Secret).data?.['.dockerconfigjson'];
    isTampered = (e) => e.type === 'MODIFIED' && data(e) !== r.original.secret;
    isRestored = (e) => e.type !== 'DELETED' && data(e) === r.original.secret;
    write = () =>
      r.client.request(
        'PATCH',
        `${SECRET_PATH}?fieldManager=bench-tamper`,
        { data: dockerConfig(`tampered-${n}`) },
        'application/merge-patch+json',
      );
  } else if (kind === 'ConfigMap edit') {
    watch = r.configMap;
    const data = (e: SeenEvent<KubernetesObject>): string | undefined =>
      (e.object as V1ConfigMap).data?.[CM_KEY];
    isTampered = (e) => e.type === 'MODIFIED' && data(e) !== r.original.configMap;
    isRestored = (e) => e.type !== 'DELETED' && data(e) === r.original.configMap;
    // Still a valid config (trailing blanks), so the runtime's webhook keeps working.
    write = () =>
      r.client.request(
        'PATCH',
        `${CM_PATH}?fieldManager=bench-tamper`,
        { data: { [CM_KEY]: `${r.original.configMap}${' '.repeat(1 + (n % 50))}` } },
        'application/merge-patch+json',
      );
  } else {
    watch = r.bundle;
    isTampered = (e) => e.type === 'DELETED';
    isRestored = (e) =>
      e.type === 'ADDED' && (e.object as ClusterTrustBundle).spec.trustBundle === r.original.bundle;
    write = () => r.client.request('DELETE', `${r.bundlePath}/${encodeURIComponent(CTB_NAME)}`);
  }
  const mark = watch.mark();
  const t0 = performance.now();
  const issuedAt = performance.timeOrigin + t0;
  const failed = (failure: string, writeMs: number): TamperSample => ({
    runtime: name,
    kind,
    issuedAt,
    repairMs: undefined,
    writeMs,
    afterPersistMs: undefined,
    failure,
  });
  const message = (error: unknown): string => (error instanceof Error ? error.message : String(error));
  try {
    await write();
  } catch (error) {
    return failed(`tamper failed: ${message(error)}`, performance.now() - t0);
  }
  const writeMs = performance.now() - t0;
  if (afterWrite) {
    try {
      await afterWrite();
    } catch (error) {
      return failed(`after the tamper: ${message(error)}`, writeMs);
    }
  }
  const seen = await watch.waitFor(mark, isTampered, timeoutMs);
  if (!seen) return failed('tamper never seen', writeMs);
  const restored = await watch.waitFor(
    seen.index + 1,
    isRestored,
    Math.max(0, timeoutMs - (performance.now() - t0)),
  );
  if (!restored) return failed('not restored in time', writeMs);
  return {
    runtime: name,
    kind,
    issuedAt,
    repairMs: restored.event.at - t0,
    writeMs,
    afterPersistMs: restored.event.at - seen.event.at,
  };
}
