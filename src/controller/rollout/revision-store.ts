import { REVISIONS_KEPT, revisionSecretNames } from '../../api/kcp-objects.js';
import type { V1Secret } from '@kubernetes/client-node';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { KubeApiError, statusCodeOf } from '../../kube/kube-errors.js';
import { kubeRequest } from '../../kube/kube-request.js';
import type { SyncSources } from '../direct/sync-set.js';
import type { Revision } from './revision.js';

/** Label of the Secrets that keep past revisions. */
export const REVISION_LABEL = 'rt-bootstrapper.kyma-project.io/revision';
/** Annotation with the revision's ID (the name is a digest of it). */
export const REVISION_ID_ANNOTATION = 'rt-bootstrapper.kyma-project.io/revision-id';
const KEY = 'revision.json';

/** Annotation with when the revision was stored (the oldest slot is reused first). */
export const REVISION_SAVED_ANNOTATION = 'rt-bootstrapper.kyma-project.io/saved-at';

/** What a stored revision holds: only the content a set is built from, and the release. */
interface StoredRevision {
  readonly id: string;
  readonly release: Revision['release'];
  readonly setVersion: string;
  readonly pullSecret?: Pick<V1Secret, 'type' | 'data'>;
  readonly clusterTrustBundle?: { metadata: { name?: string }; spec: unknown };
  readonly configMap?: { metadata: { name?: string; namespace?: string }; data?: Record<string, string> };
}

/**
 * Past revisions on the KCP, so a rollback has the content it goes back to: each one in a
 * Secret (it holds the pull Secret's content, which stays in a Secret, never in a ConfigMap or a
 * log), in a fixed ring of slots, the oldest reused first unless a rollout still names it. Read
 * ones are cached (a revision's content never changes).
 */
export class RevisionStore {
  private readonly cache = new Map<string, Revision>();

  constructor(
    private readonly kcp: ClusterAccess,
    private readonly namespace: string,
    private readonly keep = REVISIONS_KEPT,
  ) {}

  /** The revision if it was read or saved by this process. */
  cached(id: string): Revision | undefined {
    return this.cache.get(id);
  }

  /**
   * Stores `revision` unless a slot holds it: in an empty slot, else over the oldest one that no
   * rollout names (`protect`: the stable and target revisions, so at most two of the slots).
   */
  async save(revision: Revision, protect: readonly string[]): Promise<void> {
    if (this.cache.has(revision.id)) return;
    const slots = await this.list();
    if (slots.some((s) => idOf(s) === revision.id)) {
      this.cache.set(revision.id, revision);
      return;
    }
    const names = revisionSecretNames(this.keep);
    const taken = new Map(slots.map((s) => [s.metadata?.name ?? '', s]));
    const free = names.find((n) => !taken.has(n));
    const reusable = [...slots]
      .filter((s) => names.includes(s.metadata?.name ?? '') && !protect.includes(idOf(s) ?? ''))
      .sort((a, b) => savedAt(a).localeCompare(savedAt(b)))[0];
    const name = free ?? reusable?.metadata?.name;
    // Cannot happen while `keep` exceeds the two protected revisions.
    if (name === undefined) throw new Error(`no free revision slot for ${revision.id}`);
    const body = {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name,
        namespace: this.namespace,
        labels: { [REVISION_LABEL]: 'true' },
        annotations: {
          [REVISION_ID_ANNOTATION]: revision.id,
          [REVISION_SAVED_ANNOTATION]: new Date().toISOString(),
        },
        // Replacing a slot: only over the version read.
        resourceVersion: free === undefined ? reusable?.metadata?.resourceVersion : undefined,
      },
      type: 'Opaque',
      data: { [KEY]: Buffer.from(JSON.stringify(toStored(revision))).toString('base64') },
    };
    try {
      await kubeRequest(this.kcp, {
        method: free === undefined ? 'PUT' : 'POST',
        path: free === undefined ? `${this.secretsPath()}/${name}` : this.secretsPath(),
        body,
        timeoutMs: 15_000,
        parseResponse: false,
      });
    } catch (error) {
      // Another writer (a replica) took the slot meanwhile: fine if it stored this revision.
      const code = statusCodeOf(error);
      const stored =
        (code === 409 || code === 422) && (await this.list()).some((s) => idOf(s) === revision.id);
      if (!stored) throw KubeApiError.wrap(`cannot store revision ${revision.id} in ${name}`, error);
    }
    const replaced = free === undefined && reusable ? idOf(reusable) : undefined;
    if (replaced !== undefined) this.cache.delete(replaced);
    this.cache.set(revision.id, revision);
  }

  /** The revision with this ID, read from the KCP if not cached; undefined if no slot holds it. */
  async load(id: string): Promise<Revision | undefined> {
    const known = this.cache.get(id);
    if (known) return known;
    const secret = (await this.list()).find((s) => idOf(s) === id);
    const text = secret?.data?.[KEY];
    if (text === undefined) return undefined;
    const revision = fromStored(JSON.parse(Buffer.from(text, 'base64').toString()) as StoredRevision);
    this.cache.set(id, revision);
    return revision;
  }

  private async list(): Promise<V1Secret[]> {
    try {
      const list = await kubeRequest<{ items: V1Secret[] }>(this.kcp, {
        method: 'GET',
        path: this.secretsPath(),
        query: { labelSelector: `${REVISION_LABEL}=true` },
        timeoutMs: 15_000,
      });
      return list.items;
    } catch (error) {
      throw KubeApiError.wrap('cannot list the stored revisions', error);
    }
  }

  private secretsPath(): string {
    return `/api/v1/namespaces/${this.namespace}/secrets`;
  }
}

const idOf = (s: V1Secret): string | undefined => s.metadata?.annotations?.[REVISION_ID_ANNOTATION];
const savedAt = (s: V1Secret): string => s.metadata?.annotations?.[REVISION_SAVED_ANNOTATION] ?? '';

function toStored(revision: Revision): StoredRevision {
  const s = revision.sources;
  return {
    id: revision.id,
    release: revision.release,
    setVersion: s.version,
    pullSecret: s.pullSecret ? { type: s.pullSecret.type, data: s.pullSecret.data } : undefined,
    clusterTrustBundle: s.clusterTrustBundle
      ? { metadata: { name: s.clusterTrustBundle.metadata?.name }, spec: s.clusterTrustBundle.spec }
      : undefined,
    configMap: s.configMap
      ? {
          metadata: { name: s.configMap.metadata?.name, namespace: s.configMap.metadata?.namespace },
          data: s.configMap.data,
        }
      : undefined,
  };
}

function fromStored(stored: StoredRevision): Revision {
  const sources: SyncSources = {
    version: stored.setVersion,
    pullSecret: stored.pullSecret,
    clusterTrustBundle: stored.clusterTrustBundle as SyncSources['clusterTrustBundle'],
    configMap: stored.configMap,
  };
  return { id: stored.id, sources, release: stored.release };
}
