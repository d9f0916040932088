/**
 * The runtime agent's parts for one term of leadership (./runtime-agent.ts), each built afresh
 * when this replica starts leading and stopped when it stops: what a part needs of the rest of
 * the process is handed to it here, at construction.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { ClusterAccess } from '../kube/cluster-access.js';
import { part } from '../process/part-group.js';
import { RuntimeAttestor } from '../drift/attestor.js';
import type { ClientTlsFiles } from '../drift/reloading-tls-agent.js';
import { startPreflight, type Preflight, type PreflightOptions } from './preflight/preflight-runner.js';
import {
  RenamedCopySweeper,
  renamedCopyCalls,
  type RenamedCopySweeperOptions,
} from './pull-secret/renamed-copy-sweeper.js';
import type { LeaderPart } from './runtime-agent.js';
import { startWorkloadFollower, type WorkloadFollowerOptions } from './workload-health/workload-follower.js';

/** The attestor (../drift/attestor.ts): one per runtime is enough for the KCP, the agent's leader. */
export function attestorPart(o: {
  readonly url: string;
  readonly tls: ClientTlsFiles;
  readonly access: ClusterAccess;
  readonly registry: Registry;
  readonly logger: Logger;
  readonly initialDelayMaxMs: number | undefined;
}): LeaderPart {
  return () => {
    const attestor = new RuntimeAttestor({
      url: o.url,
      tls: o.tls,
      access: o.access,
      logger: o.logger,
      registry: o.registry,
      initialDelayMaxMs: o.initialDelayMaxMs,
    });
    return part('attestor', {
      start: () => {
        attestor.start();
      },
      stop: () => attestor.stop(),
    });
  };
}

/** The workload follower (./workload-health/workload-follower.ts), told whether the term lasts. */
export function workloadFollowerPart(o: Omit<WorkloadFollowerOptions, 'isActive'>): LeaderPart {
  return (leadership) => {
    let follower: { stop(): Promise<void> } | undefined;
    return part('workload-follower', {
      start: () => {
        follower = startWorkloadFollower({ ...o, isActive: () => leadership.isLeader() });
      },
      stop: () => follower?.stop(),
    });
  };
}

/**
 * The preflight (./preflight/preflight-runner.ts) across terms: admission asks every replica
 * {@link knownMissing}, which only the leader's check can know (false elsewhere).
 */
export class PreflightParts {
  private current: Preflight | undefined;

  constructor(private readonly o: Omit<PreflightOptions, 'isActive'>) {}

  /** Whether the last check of this replica's term found this rewritten image missing. */
  readonly knownMissing = (image: string): boolean => this.current?.knownMissing(image) ?? false;

  /** The preflight of one term. */
  readonly leaderPart: LeaderPart = (leadership) =>
    part('preflight', {
      start: () => {
        this.current = startPreflight({ ...this.o, isActive: () => leadership.isLeader() });
      },
      stop: async () => {
        const running = this.current;
        this.current = undefined;
        await running?.stop();
      },
    });
}

/**
 * The renamed-copy sweeper (./pull-secret/renamed-copy-sweeper.ts): the leader remembers the
 * pull-Secret names and removes copies of earlier ones. A change of the configuration reaches
 * the sweeper of the term under way.
 */
export class SweeperParts {
  private current: RenamedCopySweeper | undefined;

  constructor(
    private readonly o: Omit<RenamedCopySweeperOptions, 'calls'> & {
      readonly access: ClusterAccess;
      readonly statusConfigMap: { readonly namespace: string; readonly name: string } | undefined;
      /** Registers a listener of configuration changes (the holder's). */
      readonly onConfigChange: (listener: () => void) => void;
    },
  ) {
    o.onConfigChange(() => {
      this.current?.follow();
    });
  }

  /** The sweeper of one term. */
  readonly leaderPart: LeaderPart = () =>
    part('renamed-copy-sweeper', {
      start: () => {
        const sweeper = new RenamedCopySweeper({
          calls: renamedCopyCalls(this.o.access, this.o.statusConfigMap),
          currentName: this.o.currentName,
          metrics: this.o.metrics,
          logger: this.o.logger,
          resweepMs: this.o.resweepMs,
        });
        this.current = sweeper;
        sweeper.follow();
      },
      stop: async () => {
        const running = this.current;
        this.current = undefined;
        await running?.stop();
      },
    });
}
