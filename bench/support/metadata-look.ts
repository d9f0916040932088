// Issue 26's alternative to attestations, run inside the controller child
// (./controller-child.ts, `/metadata-look…`): the KCP reads, itself, the resourceVersion of every
// object in its record of a runtime and compares them with the record, as a periodic resync
// without attestations would. Through the controller's own client stack: a RuntimeClientPool
// client per runtime from its kubeconfig, kubeRequest, metadata-only answers. Two ways to read:
// - `get`: one GET per recorded object (`as=PartialObjectMetadata`);
// - `list`: one LIST per kind and namespace of the record with our managed-by label selector
//   (`as=PartialObjectMetadataList`), and a GET for a recorded object no list returned.
// Measured by ./metadata-look-cost.ts.
import type http from 'node:http';
import { refKey, type AttestedObject, type ManagedRef } from '../../src/api/attestation.js';
import { RuntimeClientPool } from '../../src/controller/direct/runtime-clients.js';
import type { ClusterAccess } from '../../src/kube/cluster-access.js';
import { KubeApiError } from '../../src/kube/kube-errors.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { collectionPath, objectPath } from '../../src/kube/resource-path.js';
import { attestableVersion } from '../../src/drift/managed-versions.js';
import { MANAGED_BY_LABEL, MANAGED_BY_VALUE } from '../../src/api/managed-labels.js';
import { forEachLimited } from './limited.js';

export type LookMode = 'get' | 'list';

/** A runtime to look at: its kubeconfig Secret's value (base64) and the KCP's record of it. */
export interface LookRuntime {
  readonly id: string;
  readonly kubeconfig: string;
  readonly record: readonly AttestedObject[];
}

/** What one look at one runtime did. */
export interface LookOutcome {
  readonly requests: number;
  /** Recorded objects whose version on the runtime is not the recorded one (absent included). */
  readonly differing: number;
  /** Requests that failed other than with 404. */
  readonly failed: number;
}

/** A pass over every prepared runtime; with `serial`, each runtime's first and second look's CPU. */
export interface LookPass {
  readonly runtimes: number;
  readonly requests: number;
  readonly differing: number;
  readonly failed: number;
  readonly ms: number;
  readonly serial?: { readonly coldCpuMs: number; readonly warmCpuMs: number };
}

const OBJECT_METADATA = 'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1';
const LIST_METADATA = 'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1';
const SELECTOR = `${MANAGED_BY_LABEL}=${MANAGED_BY_VALUE}`;
/**
 * Requests to one runtime at once: one after another on one connection, so a look costs one TLS
 * handshake (a second connection, as a reconcile's parallel reads open, costs a second one).
 */
const PER_RUNTIME = 1;

interface Metadata {
  readonly metadata?: {
    readonly name?: string;
    readonly namespace?: string;
    readonly resourceVersion?: unknown;
  };
}

/** The record's objects by kind and namespace: one LIST each in `list` mode. */
export function lookGroups(record: readonly ManagedRef[]): Map<string, ManagedRef[]> {
  const groups = new Map<string, ManagedRef[]>();
  for (const ref of record) {
    const key = `${ref.apiVersion}|${ref.kind}|${ref.namespace}`;
    groups.set(key, [...(groups.get(key) ?? []), ref]);
  }
  return groups;
}

/** Reads every recorded object's version on one runtime with `mode`'s requests; compares. */
export async function lookAt(
  access: ClusterAccess,
  record: readonly AttestedObject[],
  mode: LookMode,
): Promise<LookOutcome> {
  const found = new Map<string, string>();
  let requests = 0;
  let failed = 0;
  const call = async <T>(
    path: string,
    accept: string,
    query?: Record<string, string>,
  ): Promise<T | undefined> => {
    requests++;
    try {
      return await kubeRequest<T>(access, { method: 'GET', path, accept, ...(query ? { query } : {}) });
    } catch (error) {
      if (!(error instanceof KubeApiError && error.statusCode === 404)) failed++;
      return undefined;
    }
  };
  const getOne = async (ref: ManagedRef): Promise<void> => {
    const path = objectPath({
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      metadata: { name: ref.name, ...(ref.namespace === '' ? {} : { namespace: ref.namespace }) },
    });
    const o = await call<Metadata>(path, OBJECT_METADATA);
    found.set(refKey(ref), attestableVersion(o?.metadata?.resourceVersion));
  };
  if (mode === 'get') await forEachLimited(record, PER_RUNTIME, getOne);
  else {
    await forEachLimited([...lookGroups(record).values()], PER_RUNTIME, async (refs) => {
      const first = refs[0];
      if (first === undefined) return;
      const path = collectionPath(first.apiVersion, first.kind, first.namespace);
      const list = await call<{ items?: readonly Metadata[] }>(path, LIST_METADATA, {
        labelSelector: SELECTOR,
      });
      for (const item of list?.items ?? []) {
        const m = item.metadata;
        if (m?.name === undefined) continue;
        const ref = { ...first, name: m.name };
        found.set(refKey(ref), attestableVersion(m.resourceVersion));
      }
    });
    // A recorded object the lists did not return (unlabelled, or gone): read on its own.
    await forEachLimited(
      record.filter((ref) => !found.has(refKey(ref))),
      PER_RUNTIME,
      getOne,
    );
  }
  const differing = record.filter((o) => found.get(refKey(o)) !== o.resourceVersion).length;
  return { requests, differing, failed };
}

/**
 * The runtimes and clients of the looks, behind the child's `/metadata-look` routes:
 * `POST /metadata-look/prepare` (a JSON array of {@link LookRuntime}), then
 * `GET /metadata-look?mode=get|list&concurrency=16` (a cold pass: new clients, so new TLS
 * contexts and full handshakes, as after a period's idle) or `…&serial=1` (one runtime at a time,
 * each runtime's first look on a new client and a second right after on its open connection,
 * each timed with the process's own CPU clock).
 */
export class MetadataLooks {
  private runtimes: readonly LookRuntime[] = [];

  async handle(req: http.IncomingMessage): Promise<LookPass | { prepared: number }> {
    const url = new URL(req.url ?? '/', 'http://child');
    if (url.pathname === '/metadata-look/prepare') {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      this.runtimes = JSON.parse(Buffer.concat(chunks).toString('utf8')) as LookRuntime[];
      return { prepared: this.runtimes.length };
    }
    const mode: LookMode = url.searchParams.get('mode') === 'list' ? 'list' : 'get';
    const pool = new RuntimeClientPool();
    const t0 = performance.now();
    const total = { requests: 0, differing: 0, failed: 0 };
    const add = (o: LookOutcome): void => {
      total.requests += o.requests;
      total.differing += o.differing;
      total.failed += o.failed;
    };
    const look = (r: LookRuntime): Promise<LookOutcome> =>
      lookAt(pool.get(r.id, r.kubeconfig), r.record, mode);
    let serial: LookPass['serial'];
    if (url.searchParams.get('serial') === '1') {
      const cpu = { coldCpuMs: 0, warmCpuMs: 0 };
      const timed = async (r: LookRuntime, field: keyof typeof cpu): Promise<LookOutcome> => {
        const c0 = process.cpuUsage();
        const outcome = await look(r);
        const c1 = process.cpuUsage(c0);
        cpu[field] += (c1.user + c1.system) / 1000;
        return outcome;
      };
      for (const r of this.runtimes) {
        add(await timed(r, 'coldCpuMs'));
        add(await timed(r, 'warmCpuMs'));
      }
      serial = cpu;
    } else {
      const concurrency = Number(url.searchParams.get('concurrency') ?? '16');
      await forEachLimited(this.runtimes, concurrency, async (r) => {
        add(await look(r));
      });
    }
    pool.stop();
    return {
      runtimes: this.runtimes.length,
      ...total,
      ms: performance.now() - t0,
      ...(serial ? { serial } : {}),
    };
  }
}
