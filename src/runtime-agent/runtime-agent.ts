/**
 * The runtime agent (docs/runtime-agent.md): the parts of `rtb webhook` that act for the runtime
 * besides admitting Pods (the trust restarter, the attestor, the workload follower, the preflight,
 * the renamed-copy sweeper), run by one leader election of their own among the replicas. Each
 * term of leadership builds its parts afresh, starts them as one group (../process/part-group.ts)
 * and stops them, last started first, when the term ends. The Lease keeps the name the trust
 * restarter's had (`rt-bootstrapper-trust-restarter`), so a replica of an earlier release that
 * still holds it keeps every agent part of this release waiting: no two restarters at once.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { RESTARTER_LEASE } from '../api/trust-stamp.js';
import { abortableSleep, untilAborted } from '../kube/abortable-sleep.js';
import type { ClusterAccess } from '../kube/cluster-access.js';
import type { LeaderElectionTiming } from '../kube/leader-election-timing.js';
import { LeaderElector, type LeaderCallbacks } from '../kube/leader-election.js';
import { PartGroup, type Part } from '../process/part-group.js';

/**
 * The agent's Lease: the trust restarter's name of earlier releases, kept so that an upgrade
 * elects one leader across both versions (docs/runtime-agent.md).
 */
export const RUNTIME_AGENT_LEASE = RESTARTER_LEASE;

/** What a part of one term may ask of the term. */
export interface Leadership {
  /** Whether this replica still leads (its last renewal fresh): a fence for writes. */
  isLeader(): boolean;
}

/** Builds one part for a term of leadership (a fresh one each term). */
export type LeaderPart = (leadership: Leadership) => Part;

/** The election of the agent. */
export interface RuntimeAgentElection {
  /** The Lease's namespace (the webhook's). */
  readonly namespace: string;
  readonly leaseName: string;
  /** Unique per process. */
  readonly identity: string;
  readonly timing?: Partial<LeaderElectionTiming>;
}

/** The election as the agent uses it (a {@link LeaderElector}; tests drive their own). */
export interface Elector {
  start(callbacks: LeaderCallbacks): void;
  stop(): Promise<void>;
  isLeader(): boolean;
}

/** Settings of a {@link RuntimeAgent}. */
export interface RuntimeAgentOptions {
  readonly access: ClusterAccess;
  readonly election: RuntimeAgentElection;
  /** The parts each term runs, started in this order (and their needs) and stopped in reverse. */
  readonly parts: readonly LeaderPart[];
  readonly logger: Logger;
  /** Parts of the process that must run before the agent (the admission server). */
  readonly needs?: readonly Part[];
  /** Replaces the Lease election (tests). */
  readonly elector?: Elector;
  /** After a term's parts failed to start, they are tried again this much later (default 5 s). */
  readonly restartDelayMs?: number;
}

/** The identity of this process in the agent's election, as the Lease shows it. */
export function agentIdentity(): string {
  return `${process.env.POD_NAME ?? hostname()}_${randomUUID()}`;
}

/** The runtime agent; a part of the `rtb webhook` process (see the file comment). */
export class RuntimeAgent implements Part {
  readonly name = 'runtime-agent';
  readonly needs: readonly Part[];
  private readonly log: Logger;
  private readonly elector: Elector;
  private terms = 0;

  constructor(private readonly o: RuntimeAgentOptions) {
    this.needs = o.needs ?? [];
    this.log = o.logger.child({ part: 'runtime-agent' });
    this.elector =
      o.elector ??
      new LeaderElector({
        kubeConfig: o.access,
        namespace: o.election.namespace,
        name: o.election.leaseName,
        identity: o.election.identity,
        timing: o.election.timing,
        logger: this.log,
      });
  }

  /** Whether this replica leads the agent now. */
  isLeader(): boolean {
    return this.elector.isLeader();
  }

  /** How many terms this replica led (tests). */
  termsLed(): number {
    return this.terms;
  }

  /** Stands for election; the parts run while this replica leads. */
  start(): void {
    this.elector.start({
      onStartedLeading: (signal) => this.lead(signal),
      onStoppedLeading: () => {
        this.log.info('no longer leading the runtime agent');
      },
    });
  }

  /** Stops the parts of a term under way, then releases the Lease for a standby. */
  async stop(): Promise<void> {
    await this.elector.stop();
  }

  /** One term: the parts start, run until the term ends, and stop in reverse. */
  private async lead(signal: AbortSignal): Promise<void> {
    this.terms++;
    const leadership: Leadership = { isLeader: () => this.elector.isLeader() };
    const group = new PartGroup('runtime agent (leading)', this.log);
    for (const make of this.o.parts) group.add(make(leadership));
    this.log.info('leading the runtime agent');
    while (!signal.aborted) {
      try {
        await group.start();
        break;
      } catch (err) {
        // The group stopped what it had started; the term still holds the Lease, so try again.
        this.log.error({ err }, 'the runtime agent’s parts did not start; trying again');
        await abortableSleep(this.o.restartDelayMs ?? 5_000, signal);
      }
    }
    await untilAborted(signal);
    await group.stop();
  }
}
