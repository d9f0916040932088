/**
 * Reading the resourceVersions of the objects the KCP manages on this runtime, for an
 * attestation (./attestor.ts). Anything unreadable is reported as '': the KCP then re-applies,
 * which is always safe.
 */
import { untilAborted } from '../kube/abortable-sleep.js';
import type { AttestedObject, ManagedRef } from '../api/attestation.js';
import type { ClusterAccess } from '../kube/cluster-access.js';
import { kubeRequest } from '../kube/kube-request.js';
import { objectPath } from '../kube/resource-path.js';

/**
 * Reads one object's `metadata.resourceVersion` on the runtime ('' when it has none); rejects
 * (or resolves '') when the object is absent or unreadable. `signal` aborts when the answer is
 * no longer wanted.
 */
export type VersionReader = (ref: ManagedRef, signal: AbortSignal) => Promise<string>;

/** A {@link VersionReader} GETting the object's path through `access`, each GET bounded by `timeoutMs`. */
export function kubeVersionReader(access: ClusterAccess, timeoutMs: number): VersionReader {
  return async (ref) => {
    const path = objectPath({
      apiVersion: ref.apiVersion,
      kind: ref.kind,
      metadata: { name: ref.name, namespace: ref.namespace },
    });
    // The body is needed for its metadata only; a managed object is small (a plan holds ~20).
    const o = await kubeRequest<{ metadata?: { resourceVersion?: unknown } } | undefined>(access, {
      method: 'GET',
      path,
      timeoutMs,
    });
    return attestableVersion(o?.metadata?.resourceVersion);
  };
}

// What the listener accepts (../api/attestation.ts): printable ASCII without spaces, 64 at most.
const ATTESTABLE = /^[\x21-\x7e]{0,64}$/;

/** A resourceVersion as the attestation may carry it; '' for anything it could not. */
export function attestableVersion(value: unknown): string {
  return typeof value === 'string' && ATTESTABLE.test(value) ? value : '';
}

/**
 * Reads every ref's version with at most `concurrency` reads at a time, in `refs`' order. A read
 * that fails reports ''; once `signal` aborts (a deadline, a stop), the reads still running
 * report '' and the result is returned without waiting for them.
 */
export async function readVersions(
  refs: readonly ManagedRef[],
  read: VersionReader,
  concurrency: number,
  signal: AbortSignal,
): Promise<AttestedObject[]> {
  const versions = refs.map(() => '');
  let next = 0;
  // A function: TypeScript would keep the loop condition's narrowing across the await.
  const live = (): boolean => !signal.aborted;
  const worker = async (): Promise<void> => {
    while (live()) {
      const i = next++;
      const ref = refs[i];
      if (ref === undefined) return;
      // Through a promise, so a reader that throws at once counts as a failed read too.
      const version = await Promise.resolve()
        .then(() => read(ref, signal))
        .then(attestableVersion, () => '');
      // A read that ends after the deadline does not count: the result may already be out.
      if (live()) versions[i] = version;
    }
  };
  const workers = Array.from({ length: Math.max(1, Math.min(concurrency, refs.length)) }, worker);
  await Promise.race([Promise.all(workers), untilAborted(signal)]);
  return refs.map((ref, i) => ({
    apiVersion: ref.apiVersion,
    kind: ref.kind,
    namespace: ref.namespace,
    name: ref.name,
    resourceVersion: versions[i] ?? '',
  }));
}
