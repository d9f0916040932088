import { kubeconfigSecretOf, type RuntimeBootstrapper } from '../../api/runtime-bootstrapper.js';

const keyOf = (rb: RuntimeBootstrapper): string => `${rb.metadata.namespace}/${rb.metadata.name}`;
const secretOf = (rb: RuntimeBootstrapper): string => {
  const ref = kubeconfigSecretOf(rb);
  return `${ref.namespace}/${ref.name}`;
};

/**
 * The RuntimeBootstrappers by runtime ID and by kubeconfig Secret, kept from the watch's events:
 * a drift report, a rotated kubeconfig or a new Secret finds its CRs at once, where a scan of
 * every CR per event costs 5,000 × 5,000 steps when all Secrets are listed at start.
 */
export class BootstrapperIndex {
  private readonly byRuntime = new Map<string, string>();
  private readonly bySecret = new Map<string, Set<string>>();
  /** What each CR was indexed under, to take it out again. */
  private readonly indexed = new Map<string, { runtime: string; secret: string }>();

  /** Indexes `rb` (added or changed). */
  put(rb: RuntimeBootstrapper): void {
    const key = keyOf(rb);
    const runtime = rb.spec.runtimeID;
    const secret = secretOf(rb);
    const before = this.indexed.get(key);
    if (before?.runtime === runtime && before.secret === secret) return;
    if (before) this.unlink(key, before);
    this.indexed.set(key, { runtime, secret });
    this.byRuntime.set(runtime, key);
    let keys = this.bySecret.get(secret);
    if (!keys) this.bySecret.set(secret, (keys = new Set()));
    keys.add(key);
  }

  /** Forgets `rb` (deleted). */
  remove(rb: RuntimeBootstrapper): void {
    const key = keyOf(rb);
    const before = this.indexed.get(key);
    if (!before) return;
    this.unlink(key, before);
    this.indexed.delete(key);
  }

  /** The key (`namespace/name`) of the CR of a runtime. */
  keyOfRuntime(runtimeId: string): string | undefined {
    return this.byRuntime.get(runtimeId);
  }

  /** The keys of the CRs whose kubeconfig is the Secret `namespace/name`. */
  keysOfSecret(namespace: string, name: string): readonly string[] {
    return [...(this.bySecret.get(`${namespace}/${name}`) ?? [])];
  }

  private unlink(key: string, at: { runtime: string; secret: string }): void {
    if (this.byRuntime.get(at.runtime) === key) this.byRuntime.delete(at.runtime);
    const keys = this.bySecret.get(at.secret);
    keys?.delete(key);
    if (keys?.size === 0) this.bySecret.delete(at.secret);
  }
}
