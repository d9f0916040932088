/**
 * Leader election on a coordination.k8s.io/v1 Lease, as client-go's `leaderelection`: one
 * candidate holds the Lease and renews it every `retryPeriod`; the others poll and may take
 * it only after they have seen the same record unchanged for its `leaseDurationSeconds` (by
 * their own clock, so no clock is compared across machines), or at once when it was
 * released. Writes use the Lease's resourceVersion, so two candidates can never both win.
 *
 * Safety: a leader that could not renew within `renewDeadline` of sending its last
 * successful renewal stops leading; since `renewDeadline < leaseDuration` and every other
 * candidate starts counting only when it observes that renewal (later than it was sent), the
 * old leader has stopped before anyone may start. `isLeader()` applies the same deadline by
 * the clock, so work is fenced even while the renew loop is still waiting on a request.
 */
import { statusCodeOf } from './kube-errors.js';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from '../telemetry/logger.js';
import type { ClusterAccess } from './cluster-access.js';
import { KeepAliveAccess } from './keep-alive-access.js';
import { decideLease, leaseHeld, leaseRecordOf, MicroTime, nextLeaseSpec } from './lease-decision.js';
import type { LeaseFence } from './lease-fence.js';
import { leaseCalls, type LeaseCalls } from './lease-calls.js';
import {
  electionTiming,
  JITTER_FACTOR,
  LeaderElectionConfigError,
  type LeaderElectionTiming,
} from './leader-election-timing.js';

/** Called as leadership comes and goes. */
export interface LeaderCallbacks {
  /** Start working; `signal` aborts the moment leadership is lost or the elector stops. */
  onStartedLeading(signal: AbortSignal): Promise<void> | void;
  /** Stop working; the elector waits for it before releasing the Lease or competing again. */
  onStoppedLeading(): Promise<void> | void;
  /** The observed holder changed (for logs). */
  onNewLeader?(identity: string): void;
}

/** Settings of a {@link LeaderElector}. */
export interface LeaderElectorOptions {
  /**
   * The cluster (client-node's `KubeConfig` fits): the Lease is read and written with raw
   * requests, so a process that elects loads no client-node code (the webhook's certificate writer).
   */
  readonly kubeConfig: ClusterAccess;
  readonly namespace: string;
  /** Name of the Lease. */
  readonly name: string;
  /** Unique per process, e.g. `<pod name>_<random>`. */
  readonly identity: string;
  readonly timing?: Partial<LeaderElectionTiming>;
  readonly logger: Logger;
  /** Told whenever this process starts or stops leading (metrics). */
  readonly onStatus?: (leading: boolean) => void;
  /** Labels of the Lease when this candidate creates it (shard Leases are listed by label). */
  readonly labels?: Readonly<Record<string, string>>;
}

type Attempt = 'leading' | { held: string } | 'conflict';

/** A candidate in the election for one Lease; see the file comment. */
export class LeaderElector {
  private readonly leases: LeaseCalls;
  /**
   * The Lease's own kept-alive connections: a renewal never waits behind other work for a
   * socket, nor pays a TLS handshake on a busy API server (a missed renewal costs leadership).
   */
  private readonly access: KeepAliveAccess;
  private readonly timing: LeaderElectionTiming;
  private readonly log: Logger;
  private readonly lifetime = new AbortController();
  private loop: Promise<void> | undefined;
  private leading = false;
  /** Counts leadership terms: a fence holds only in the term it was made in. */
  private term = 0;
  /** Monotonic ms when the last successful write of our record was sent. */
  private renewedAt = 0;
  private observedRv: string | undefined;
  private observedAt = 0;
  private observedHolder: string | undefined;
  private releaseOnStop = true;

  constructor(private readonly o: LeaderElectorOptions) {
    this.timing = electionTiming(o.timing);
    if (o.identity === '') throw new LeaderElectionConfigError('the identity must not be empty');
    this.access = new KeepAliveAccess(o.kubeConfig, { maxSockets: 2 });
    this.leases = leaseCalls(this.access, o.namespace, o.name);
    this.log = o.logger.child({ lease: `${o.namespace}/${o.name}`, identity: o.identity });
  }

  /** Whether this process leads now: it holds the Lease and its last renewal is fresh enough. */
  isLeader(): boolean {
    return this.leading && this.fresh(0);
  }

  /**
   * A fence for work starting now (lease-fence.ts): it holds while this term lasts and the last
   * renewal leaves at least `marginMs` before the Lease could expire for anyone else. Never
   * holds when made while not leading.
   */
  fence(marginMs: number): LeaseFence {
    if (!this.isLeader()) return () => false;
    const term = this.term;
    return () => this.leading && this.term === term && this.fresh(marginMs);
  }

  private fresh(marginMs: number): boolean {
    return leaseHeld({
      renewedAtMs: this.renewedAt,
      nowMs: performance.now(),
      renewDeadlineMs: this.timing.renewDeadlineMs,
      leaseDurationMs: this.timing.leaseDurationMs,
      marginMs,
    });
  }

  /** The holder last observed ('' if released, undefined before the first read). */
  observedLeader(): string | undefined {
    return this.observedHolder;
  }

  /** Competes, leads, and after a loss competes again, until `stop()`. A second call does nothing. */
  start(callbacks: LeaderCallbacks): void {
    if (this.loop !== undefined || this.lifetime.signal.aborted) return;
    this.loop = this.run(callbacks).catch((err: unknown) => {
      this.log.error({ err }, 'leader election loop failed');
    });
  }

  /**
   * Stops competing; if leading, stops the work first, then releases the Lease for a standby.
   * `release: false` leaves the Lease to expire, as a crashed process would (tests).
   */
  async stop(options: { readonly release?: boolean } = {}): Promise<void> {
    this.releaseOnStop = options.release ?? true;
    this.lifetime.abort();
    await this.loop;
    this.access.close();
  }

  private stopped(): boolean {
    return this.lifetime.signal.aborted;
  }

  private async run(cb: LeaderCallbacks): Promise<void> {
    while (!this.stopped()) {
      if (!(await this.acquire(cb))) return;
      const lost = new AbortController();
      this.term++;
      this.setLeading(true);
      this.log.info({}, 'became leader');
      // The work runs beside the renew loop; its failures are its own to report.
      const work = Promise.resolve()
        .then(() => cb.onStartedLeading(lost.signal))
        .catch((err: unknown) => {
          this.log.error({ err }, 'starting the leader work failed');
        });
      const why = await this.renew(cb);
      this.setLeading(false);
      lost.abort();
      if (why === 'lost') this.log.warn({}, 'leadership lost; stopping work');
      await work;
      try {
        await cb.onStoppedLeading();
      } catch (err) {
        this.log.error({ err }, 'stopping the leader work failed');
      }
      if (this.stopped()) {
        if (this.releaseOnStop) await this.release();
        return;
      }
      // Re-enter candidacy: the work is level-based and starts from the cluster's state again.
      this.log.info({}, 'standing for election again');
    }
  }

  private setLeading(leading: boolean): void {
    this.leading = leading;
    try {
      this.o.onStatus?.(leading);
    } catch {
      // Metrics are best effort.
    }
  }

  /** Polls until the Lease is ours (true) or the elector stops (false). */
  private async acquire(cb: LeaderCallbacks): Promise<boolean> {
    while (!this.stopped()) {
      const sentAt = performance.now();
      try {
        const outcome = await this.attempt(this.timing.retryPeriodMs * 2, cb);
        if (outcome === 'leading') {
          this.renewedAt = sentAt;
          return true;
        }
      } catch (err) {
        this.log.warn({ err }, 'cannot read or acquire the lease');
      }
      await this.sleep(this.timing.retryPeriodMs * (1 + Math.random() * JITTER_FACTOR));
    }
    return false;
  }

  /** Renews every retry period until the deadline passes without success, another holds it, or stop. */
  private async renew(cb: LeaderCallbacks): Promise<'lost' | 'stopped'> {
    for (;;) {
      await this.sleep(this.timing.retryPeriodMs);
      if (this.stopped()) return 'stopped';
      const sentAt = performance.now();
      const remaining = this.renewedAt + this.timing.renewDeadlineMs - sentAt;
      if (remaining <= 0) return 'lost';
      try {
        const outcome = await this.attempt(remaining, cb);
        if (outcome === 'leading') this.renewedAt = sentAt;
        else if (outcome !== 'conflict') return 'lost';
      } catch (err) {
        this.log.warn({ err }, 'cannot renew the lease');
      }
    }
  }

  /** One round: read, decide, write. Every request is bounded by `budgetMs`. */
  private async attempt(budgetMs: number, cb: LeaderCallbacks): Promise<Attempt> {
    const deadline = performance.now() + budgetMs;
    const left = (): number => Math.max(1, Math.ceil(deadline - performance.now()));
    const { namespace, name, identity } = this.o;
    const lease = await this.leases.read(left());
    const now = performance.now();
    const rv = lease?.metadata?.resourceVersion;
    if (rv !== this.observedRv) {
      this.observedRv = rv;
      this.observedAt = now;
    }
    const record = lease ? leaseRecordOf(lease) : undefined;
    if (record !== undefined && record.holderIdentity !== this.observedHolder) {
      this.observedHolder = record.holderIdentity;
      if (record.holderIdentity !== '') {
        this.log.info({ leader: record.holderIdentity }, 'new leader observed');
        cb.onNewLeader?.(record.holderIdentity);
      }
    }
    const decision = decideLease({
      identity,
      record,
      observedAtMs: this.observedAt,
      nowMs: now,
      defaultLeaseDurationMs: this.timing.leaseDurationMs,
    });
    if (decision.kind === 'wait') return { held: decision.holder };
    const durationSeconds = Math.ceil(this.timing.leaseDurationMs / 1000);
    const spec = nextLeaseSpec(decision.kind, identity, lease?.spec, new Date(), durationSeconds);
    try {
      const written =
        decision.kind === 'create'
          ? await this.leases.create(
              {
                apiVersion: 'coordination.k8s.io/v1',
                kind: 'Lease',
                metadata: { name, namespace, labels: this.o.labels ? { ...this.o.labels } : undefined },
                spec,
              },
              left(),
            )
          : // The resourceVersion read above makes this write conditional: optimistic concurrency.
            await this.leases.replace(
              { ...lease, metadata: { ...lease?.metadata, name, namespace }, spec },
              left(),
            );
      this.observedRv = written.metadata?.resourceVersion;
      this.observedAt = performance.now();
      this.observedHolder = identity;
      return 'leading';
    } catch (err) {
      // 409: someone wrote the Lease since we read it; the next round reads again.
      if (statusCodeOf(err) === 409) return 'conflict';
      throw err;
    }
  }

  /** Gives the Lease up so a standby takes over at once (client-go's ReleaseOnCancel). */
  private async release(): Promise<void> {
    const { identity } = this.o;
    try {
      const lease = await this.leases.read(this.timing.retryPeriodMs);
      if (lease?.spec?.holderIdentity !== identity) return;
      const at = new MicroTime();
      await this.leases.replace(
        {
          ...lease,
          spec: {
            holderIdentity: '',
            leaseDurationSeconds: 1,
            acquireTime: at,
            renewTime: at,
            leaseTransitions: lease.spec.leaseTransitions ?? 0,
          },
        },
        this.timing.retryPeriodMs,
      );
      this.log.info({}, 'lease released');
    } catch (err) {
      this.log.warn({ err }, 'cannot release the lease; a standby takes over when it expires');
    }
  }

  private async sleep(ms: number): Promise<void> {
    await delay(ms, undefined, { signal: this.lifetime.signal }).catch(() => undefined);
  }
}
