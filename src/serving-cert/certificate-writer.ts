/**
 * The elected replica's work: apply the serving-certificate plan step by step. It reads the
 * Secret and our webhook configurations from the caches every replica keeps, writes the Secret
 * (create, or update with the resourceVersion it planned from: a concurrent write fails with
 * 409 and the plan is made again) and the caBundles (server-side apply of that field only), and
 * plans again on every change of those objects and at the plan's next deadline. Failures are
 * logged with the step's reason (never key material) and retried with backoff; none ends the loop.
 */
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { Backoff } from '../kube/backoff.js';
import type { ClusterAccess } from '../kube/cluster-access.js';
import { statusCodeOf } from '../kube/kube-errors.js';
import type { Reflector } from '../kube/reflector.js';
import type { ServingPolicy } from './serving-policy.js';
import { planServingSecret, type ServingStep } from './serving-secret-plan.js';
import { executeSecretWrite } from './serving-secret-write.js';
import { foreignServersAmong } from './foreign-servers.js';
import { readServingSecret } from './serving-secret-codec.js';
import { putServingSecret } from './serving-secret-put.js';
import {
  applyCaBundle,
  caBundlesOf,
  lackingBundle,
  MUTATING,
  VALIDATING,
  type ConfigurationKind,
  type WebhookConfiguration,
} from './webhook-configurations.js';

/** Settings of a {@link CertificateWriter}. */
export interface CertificateWriterOptions {
  readonly access: ClusterAccess;
  readonly secret: { readonly namespace: string; readonly name: string };
  readonly secrets: Reflector<V1Secret>;
  readonly mutating: Reflector<WebhookConfiguration>;
  readonly validating: Reflector<WebhookConfiguration>;
  /** Pods behind the webhook Service that are not ours (./foreign-servers.ts). */
  readonly foreignPods: Reflector<V1Pod>;
  readonly dnsNames: readonly string[];
  readonly ipAddresses: readonly string[];
  readonly policy: ServingPolicy;
  /** Whether this replica still leads; checked before every write. */
  readonly isLeader: () => boolean;
  readonly logger: Logger;
  readonly now?: () => number;
}

/** Longest sleep without re-planning, whatever the plan's deadline. */
const MAX_SLEEP_MS = 10 * 60_000;
/** How long the writer waits for the optional ValidatingWebhookConfiguration cache. */
const VALIDATING_SYNC_WAIT_MS = 10_000;
/** More writes than this within the window means something keeps undoing them: slow down. */
const MAX_WRITES = 20;
const WRITES_WINDOW_MS = 10_000;

/** An object this writer wrote, used instead of the cache until the cache moves past `basedOn`. */
interface Written<T> {
  readonly basedOn: string | undefined;
  readonly object: T;
}

/** Applies the plan while leading; see the file comment. */
export class CertificateWriter {
  private wake: (() => void) | undefined;
  private written: { secret?: Written<V1Secret>; configs: Map<string, Written<WebhookConfiguration>> } = {
    configs: new Map(),
  };
  private writes: number[] = [];
  private readonly backoff = new Backoff({ baseMs: 500, maxMs: 60_000, factor: 2, jitter: 0.5 });

  constructor(private readonly o: CertificateWriterOptions) {
    const poke = {
      onAdd: () => {
        this.poke();
      },
      onUpdate: () => {
        this.poke();
      },
      onDelete: () => {
        this.poke();
      },
    };
    o.secrets.addEventHandler(poke);
    o.mutating.addEventHandler(poke);
    o.validating.addEventHandler(poke);
    o.foreignPods.addEventHandler(poke);
  }

  /** Plans and writes until `signal` aborts (leadership lost or stopping). */
  async run(signal: AbortSignal): Promise<void> {
    const log = this.o.logger;
    this.written = { configs: new Map() };
    // The Pods too: until they are known, a CA another install serves with could look removable.
    await Promise.all([
      this.o.secrets.waitForSync(signal),
      this.o.mutating.waitForSync(signal),
      this.o.foreignPods.waitForSync(signal),
    ]).catch(() => undefined);
    // The validating configuration is optional (the drift channel): one that cannot be listed
    // (no permission) must not stop the serving certificate; it counts once it is known.
    await Promise.race([
      this.o.validating.waitForSync(signal).catch(() => undefined),
      new Promise((resolve) => setTimeout(resolve, VALIDATING_SYNC_WAIT_MS).unref()),
    ]);
    if (!this.o.validating.hasSynced())
      log.warn('the ValidatingWebhookConfiguration cannot be read yet; writing without it');
    log.info('writing the serving certificate and the caBundle');
    // A function, so the compiler does not assume the signal unchanged across awaits.
    const stopped = (): boolean => signal.aborted;
    while (!stopped()) {
      let step: ServingStep | undefined;
      try {
        step = this.plan();
        if (step.kind === 'wait') {
          log.debug({ reason: step.reason, until: step.until }, 'serving certificate: nothing to do');
          await this.sleep(step.until === undefined ? MAX_SLEEP_MS : step.until - this.now(), signal);
          continue;
        }
        if (!this.o.isLeader()) {
          await this.sleep(1000, signal);
          continue;
        }
        log.info({ step: step.kind, reason: step.reason }, 'serving certificate: writing');
        await (step.kind === 'write-bundle' ? this.writeBundle(step.bundle) : this.writeSecret(step));
        this.backoff.reset();
        if (this.tooBusy()) {
          // The plan converges in a few steps (its tests replay years); never spin on the API server.
          const delay = this.backoff.next();
          log.warn(
            { step: step.kind, reason: step.reason, delayMs: Math.round(delay) },
            'serving certificate: too many writes; slowing down',
          );
          await this.sleep(delay, signal);
        }
      } catch (err) {
        if (stopped()) break;
        // Another writer (or the API server's own view) moved on: plan again from the caches.
        const conflict = statusCodeOf(err) === 409;
        const delay = conflict ? 1000 : this.backoff.next();
        (conflict ? log.info.bind(log) : log.warn.bind(log))(
          { err, step: step?.kind, reason: step?.reason, delayMs: Math.round(delay) },
          conflict
            ? 'serving certificate: write conflict; planning again'
            : 'serving certificate: step failed; retrying',
        );
        await this.sleep(delay, signal);
      }
    }
  }

  /** Whether this writer wrote more than {@link MAX_WRITES} times in {@link WRITES_WINDOW_MS}. */
  private tooBusy(): boolean {
    const now = performance.now();
    this.writes = this.writes.filter((t) => now - t < WRITES_WINDOW_MS);
    this.writes.push(now);
    return this.writes.length > MAX_WRITES;
  }

  private now(): number {
    return (this.o.now ?? Date.now)();
  }

  private poke(): void {
    const wake = this.wake;
    this.wake = undefined;
    wake?.();
  }

  private async sleep(ms: number, signal: AbortSignal): Promise<void> {
    if (signal.aborted) return;
    await new Promise<void>((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        if (this.wake === done) this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, Math.min(Math.max(0, ms), MAX_SLEEP_MS));
      signal.addEventListener('abort', done);
      this.wake = done;
    });
  }

  private secret(): V1Secret | undefined {
    const cached = this.o.secrets.store.get(`${this.o.secret.namespace}/${this.o.secret.name}`);
    const w = this.written.secret;
    if (w && cached?.metadata?.resourceVersion === w.basedOn) return w.object;
    this.written.secret = undefined;
    return cached;
  }

  private configuration(kind: ConfigurationKind): WebhookConfiguration | undefined {
    const cached = (kind === MUTATING ? this.o.mutating : this.o.validating).store.get(kind.name);
    const w = this.written.configs.get(kind.name);
    if (w && cached?.metadata?.resourceVersion === w.basedOn) return w.object;
    this.written.configs.delete(kind.name);
    return cached;
  }

  private plan(): ServingStep {
    return planServingSecret({
      secret: readServingSecret(this.secret()),
      // A cache not synced yet is empty: its configuration counts once it is known.
      bundles: [MUTATING, VALIDATING].flatMap((k) => caBundlesOf(this.configuration(k))),
      issuer: { kind: 'own' },
      dnsNames: this.o.dnsNames,
      ipAddresses: this.o.ipAddresses,
      now: this.now(),
      policy: this.o.policy,
      // Not listed yet (no permission, API down): as if they served, so nothing is removed.
      foreignServers: !this.o.foreignPods.hasSynced() || foreignServersAmong(this.o.foreignPods.store.list()),
    });
  }

  private async writeSecret(step: Extract<ServingStep, { kind: 'write-secret' }>): Promise<void> {
    const current = this.secret();
    const next = await executeSecretWrite(readServingSecret(current), step.write, {
      now: this.now(),
      dnsNames: this.o.dnsNames,
      ipAddresses: this.o.ipAddresses,
    });
    if (!this.o.isLeader()) return;
    const written = await putServingSecret(this.o.access, this.o.secret, current, next);
    this.written.secret = { basedOn: current?.metadata?.resourceVersion, object: written };
  }

  private async writeBundle(bundlePem: string): Promise<void> {
    const configs = [MUTATING, VALIDATING].map((kind) => [kind, this.configuration(kind)] as const);
    for (const [kind, config] of lackingBundle(configs, bundlePem)) {
      if (!this.o.isLeader()) return;
      const written = await applyCaBundle(this.o.access, kind, config, bundlePem);
      this.written.configs.set(kind.name, { basedOn: config.metadata?.resourceVersion, object: written });
    }
  }
}
