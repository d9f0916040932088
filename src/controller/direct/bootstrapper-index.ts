import { kubeconfigSecretOf, type RuntimeBootstrapper } from '../../api/runtime-bootstrapper.js';

const keyOf = (rb: RuntimeBootstrapper): string => `${rb.metadata.namespace}/${rb.metadata.name}`;
const secretOf = (rb: RuntimeBootstrapper): string => {
  const ref = kubeconfigSecretOf(rb);
  return `${ref.namespace}/${ref.name}`;
};

/** Who else claims what a RuntimeBootstrapper names: its runtime ID, its kubeconfig Secret. */
export interface BootstrapperIdentity {
  /** The key of the CR that holds the runtime ID, when that is another CR (this one is refused). */
  readonly heldBy: string | undefined;
  /** The keys of the other CRs that name the same kubeconfig Secret. */
  readonly sharesKubeconfigWith: readonly string[];
}

/** What a CR was indexed under. */
interface Indexed {
  readonly runtime: string;
  readonly secret: string;
  /** When the CR was created (epoch ms): the oldest claim of a runtime ID holds it. */
  readonly created: number;
}

/**
 * The RuntimeBootstrappers by runtime ID and by kubeconfig Secret, kept from the watch's events:
 * a drift report, a rotated kubeconfig or a new Secret finds its CRs at once, where a scan of
 * every CR per event costs 5,000 × 5,000 steps when all Secrets are listed at start.
 * A runtime ID belongs to the oldest CR that names it (then the smallest key): a second CR naming
 * it takes nothing from the first, and the first keeps it until it is deleted.
 */
export class BootstrapperIndex {
  private readonly byRuntime = new Map<string, Set<string>>();
  private readonly bySecret = new Map<string, Set<string>>();
  private readonly indexed = new Map<string, Indexed>();

  /** Indexes `rb` (added or changed). */
  put(rb: RuntimeBootstrapper): void {
    const key = keyOf(rb);
    const created = new Date(rb.metadata.creationTimestamp ?? Number.NaN).getTime();
    const next: Indexed = {
      runtime: rb.spec.runtimeID,
      secret: secretOf(rb),
      created: Number.isFinite(created) ? created : Number.MAX_SAFE_INTEGER,
    };
    const before = this.indexed.get(key);
    if (before?.runtime === next.runtime && before.secret === next.secret) return;
    if (before) this.unlink(key, before);
    this.indexed.set(key, next);
    add(this.byRuntime, next.runtime, key);
    add(this.bySecret, next.secret, key);
  }

  /** Forgets `rb` (deleted). */
  remove(rb: RuntimeBootstrapper): void {
    const key = keyOf(rb);
    const before = this.indexed.get(key);
    if (!before) return;
    this.unlink(key, before);
    this.indexed.delete(key);
  }

  /** The key (`namespace/name`) of the CR that holds a runtime ID. */
  keyOfRuntime(runtimeId: string): string | undefined {
    let holder: string | undefined;
    let oldest = Infinity;
    for (const key of this.byRuntime.get(runtimeId) ?? []) {
      const created = this.indexed.get(key)?.created ?? Infinity;
      if (created < oldest || (created === oldest && holder !== undefined && key < holder)) {
        holder = key;
        oldest = created;
      }
    }
    return holder;
  }

  /** The keys of every CR that names this runtime ID. */
  keysOfRuntime(runtimeId: string): readonly string[] {
    return [...(this.byRuntime.get(runtimeId) ?? [])];
  }

  /** The keys of the CRs whose kubeconfig is the Secret `namespace/name`. */
  keysOfSecret(namespace: string, name: string): readonly string[] {
    return [...(this.bySecret.get(`${namespace}/${name}`) ?? [])];
  }

  /** Who else claims what `rb` names (as indexed). */
  identityOf(rb: RuntimeBootstrapper): BootstrapperIdentity {
    const key = keyOf(rb);
    const holder = this.keyOfRuntime(rb.spec.runtimeID);
    return {
      heldBy: holder !== undefined && holder !== key ? holder : undefined,
      sharesKubeconfigWith: [...(this.bySecret.get(secretOf(rb)) ?? [])].filter((k) => k !== key).sort(),
    };
  }

  private unlink(key: string, at: Indexed): void {
    drop(this.byRuntime, at.runtime, key);
    drop(this.bySecret, at.secret, key);
  }
}

function add(map: Map<string, Set<string>>, at: string, key: string): void {
  let keys = map.get(at);
  if (!keys) map.set(at, (keys = new Set()));
  keys.add(key);
}

function drop(map: Map<string, Set<string>>, at: string, key: string): void {
  const keys = map.get(at);
  keys?.delete(key);
  if (keys?.size === 0) map.delete(at);
}
