import type { V1Namespace, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { statusCodeOf } from '../kube/kube-errors.js';
import type { Reflector } from '../kube/reflector.js';
import { WorkQueue } from '../kube/work-queue.js';
import type { LogRateLimit } from '../telemetry/log-rate-limit.js';
// The field manager of every rt-bootstrapper write; the drift webhook recognises its own repairs by it.
import { FIELD_MANAGER } from '../api/runtime-names.js';
import { decidePullSecretCopy, DEFAULT_EXCLUDED_NAMESPACES } from './pull-secret-desired.js';
import type { PullSecretEnsurer } from './admission-handler.js';
import type { MissingNamespaces } from './missing-namespaces.js';
import type { WebhookMetrics } from './webhook-metrics.js';

const NO_NAMESPACE = 'no pull Secret copy: the namespace does not exist; no reference added';
const CREATE_FAILED = 'cannot create the pull Secret copy; no reference added';

/** Where the source pull Secret lives. */
export interface SecretRef {
  readonly name: string;
  readonly namespace: string;
}

/** The Secret writes of the copier (client-node's `CoreV1Api` has them with these shapes). */
export interface SecretWrites {
  createNamespacedSecret(param: {
    namespace: string;
    body: V1Secret;
    fieldManager?: string;
  }): Promise<unknown>;
  replaceNamespacedSecret(param: {
    name: string;
    namespace: string;
    body: V1Secret;
    fieldManager?: string;
  }): Promise<unknown>;
  deleteNamespacedSecret(param: { name: string; namespace: string }): Promise<unknown>;
}

/** What the copier needs. */
export interface PullSecretCopierOptions {
  readonly core: SecretWrites;
  /** Secrets named like the pull Secret, in all namespaces (source and copies). */
  readonly secrets: Reflector<V1Secret>;
  readonly namespaces: Reflector<V1Namespace>;
  readonly source: SecretRef;
  readonly metrics: WebhookMetrics;
  readonly logger: Logger;
  /** Namespaces known not to exist: the admission path writes no copy there. */
  readonly missingNamespaces: MissingNamespaces;
  /** For the admission path's failures, which come once per request. */
  readonly logLimit: LogRateLimit;
  readonly excludedNamespaces?: readonly string[];
  readonly concurrency?: number;
}

/**
 * Keeps a copy of the pull Secret in every namespace (but excluded ones), equal to the source:
 * created in new namespaces, updated when the source changes, restored when a copy is edited
 * or deleted. Level-based: every event just queues the namespaces it may affect, and one
 * reconcile per namespace compares cache with desired state. Also ensures a copy synchronously
 * for the admission path.
 */
export class PullSecretCopier implements PullSecretEnsurer {
  private readonly queue: WorkQueue;
  private readonly excluded: ReadonlySet<string>;
  private readonly creating = new Map<string, Promise<boolean>>();
  private running: Promise<void> | undefined;

  constructor(private readonly o: PullSecretCopierOptions) {
    this.queue = new WorkQueue({ name: 'pull-secret-copier' });
    this.excluded = new Set(o.excludedNamespaces ?? DEFAULT_EXCLUDED_NAMESPACES);
    o.secrets.addEventHandler({
      onAdd: (s) => {
        this.onSecret(s);
      },
      onUpdate: (_old, s) => {
        this.onSecret(s);
      },
      onDelete: (s) => {
        this.onSecret(s);
      },
    });
    o.namespaces.addEventHandler({
      onAdd: (ns) => {
        this.enqueue(ns.metadata?.name);
      },
      onUpdate: (_old, ns) => {
        this.enqueue(ns.metadata?.name);
      },
    });
  }

  /** Starts the reconcile workers. */
  start(): void {
    this.running ??= this.queue.start((ns) => this.reconcile(ns), {
      concurrency: this.o.concurrency ?? 4,
      onError: (ns, err) => {
        this.o.logger.warn({ namespace: ns, err }, 'pull Secret copy failed; retrying with backoff');
      },
    });
  }

  /** Stops after the reconciles in flight. */
  async stop(): Promise<void> {
    await this.queue.shutDownWithDrain();
    await this.running;
  }

  private source(): V1Secret | undefined {
    return this.o.secrets.store.get(`${this.o.source.namespace}/${this.o.source.name}`);
  }

  private onSecret(secret: V1Secret): void {
    const ns = secret.metadata?.namespace;
    if (ns === this.o.source.namespace) {
      // The source changed: every namespace may need a write.
      for (const n of this.o.namespaces.store.list()) this.enqueue(n.metadata?.name);
    } else this.enqueue(ns);
  }

  private enqueue(ns: string | undefined): void {
    if (ns !== undefined && !this.excluded.has(ns) && ns !== this.o.source.namespace) this.queue.add(ns);
  }

  private namespaceActive(ns: string): boolean {
    const n = this.o.namespaces.store.get(ns);
    return n !== undefined && n.status?.phase !== 'Terminating' && !n.metadata?.deletionTimestamp;
  }

  /** Reconciles one namespace's copy. */
  async reconcile(namespace: string): Promise<void> {
    if (this.excluded.has(namespace)) return;
    const decision = decidePullSecretCopy({
      source: this.source(),
      copy: this.o.secrets.store.get(`${namespace}/${this.o.source.name}`),
      namespace,
      namespaceActive: this.namespaceActive(namespace),
    });
    if (decision.action === 'none') return;
    if (decision.action === 'conflict') {
      this.o.metrics.pullSecretCopies.inc({ result: 'conflict' });
      this.o.logger.warn({ namespace }, decision.why);
      return;
    }
    await this.write(namespace, decision.action, decision.secret);
  }

  private async write(namespace: string, action: 'create' | 'update', secret: V1Secret): Promise<void> {
    const name = this.o.source.name;
    try {
      if (action === 'create')
        await this.o.core.createNamespacedSecret({ namespace, body: secret, fieldManager: FIELD_MANAGER });
      else
        await this.o.core.replaceNamespacedSecret({
          name,
          namespace,
          body: secret,
          fieldManager: FIELD_MANAGER,
        });
      this.o.metrics.pullSecretCopies.inc({ result: action === 'create' ? 'created' : 'updated' });
      this.o.logger.info({ namespace, secret: name, action }, 'pull Secret copy written');
    } catch (error) {
      const code = statusCodeOf(error);
      if (action === 'create' && code === 409) return; // someone (the admission path) was first
      if (action === 'update' && code === 422) {
        // The type is immutable: replace the copy as a whole.
        await this.o.core.deleteNamespacedSecret({ name, namespace });
        const { resourceVersion: _rv, ...metadata } = secret.metadata ?? {};
        await this.o.core.createNamespacedSecret({
          namespace,
          body: { ...secret, metadata },
          fieldManager: FIELD_MANAGER,
        });
        this.o.metrics.pullSecretCopies.inc({ result: 'recreated' });
        return;
      }
      this.o.metrics.pullSecretCopies.inc({ result: 'failed' });
      throw new Error(`cannot ${action} the pull Secret copy in ${namespace}`, { cause: error });
    }
  }

  /**
   * Admission path: makes sure the Secret exists in `namespace` before the Pod referencing it is
   * stored. False when the source does not exist (no reference should be added), the namespace
   * is known not to exist, or the copy cannot be created. Concurrent calls for one namespace
   * share one create.
   */
  async ensure(namespace: string, options: { dryRun: boolean }): Promise<boolean> {
    const source = this.source();
    if (!source) return false;
    if (namespace === this.o.source.namespace) return true;
    if (this.o.secrets.store.get(`${namespace}/${this.o.source.name}`)) return true;
    if (!this.o.namespaces.store.get(namespace) && this.o.missingNamespaces.has(namespace)) return false;
    if (options.dryRun) return true; // a dry run writes nothing; the real request will
    let pending = this.creating.get(namespace);
    if (!pending) {
      pending = this.createNow(namespace, source).finally(() => {
        this.creating.delete(namespace);
      });
      this.creating.set(namespace, pending);
    }
    return pending;
  }

  private async createNow(namespace: string, source: V1Secret): Promise<boolean> {
    const decision = decidePullSecretCopy({ source, copy: undefined, namespace, namespaceActive: true });
    if (decision.action !== 'create') return decision.action === 'none';
    try {
      await this.o.core.createNamespacedSecret({
        namespace,
        body: decision.secret,
        fieldManager: FIELD_MANAGER,
      });
      this.o.metrics.pullSecretCopies.inc({ result: 'created' });
      this.o.logger.info({ namespace, secret: this.o.source.name }, 'pull Secret copied for a new Pod');
      return true;
    } catch (error) {
      const code = statusCodeOf(error);
      if (code === 409) return true;
      this.o.metrics.pullSecretCopies.inc({ result: 'failed' });
      if (code === 404) {
        // The namespace does not exist: remembered, so the next requests naming it cost no POST.
        this.o.missingNamespaces.remember(namespace);
        this.o.logLimit.warn(this.o.logger, { namespace }, NO_NAMESPACE);
      } else this.o.logLimit.error(this.o.logger, { namespace, err: error }, CREATE_FAILED);
      return false;
    }
  }
}
