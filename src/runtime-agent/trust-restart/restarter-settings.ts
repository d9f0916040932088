/**
 * `rtb webhook`'s settings of the trust-bundle restarter, turned into a running candidate with
 * its status reporter (the Lease and the status live in the webhook's namespace: `POD_NAMESPACE`
 * or kyma-system).
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { RUNTIME_NAMESPACE } from '../../api/runtime-names.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import type { LeaderElectionTiming } from '../../kube/leader-election-timing.js';
import type { RestartPacing } from './restart-actions.js';
import { deploymentStatusReporter } from './restart-status.js';
import type { TrustBundleFollower } from './trust-bundle-follower.js';
import type { RestartScope } from './restart-plan.js';
import { startTrustRestarter, type TrustRestarter } from './trust-restarter.js';

/** How the webhook restarts Pods on a trust-bundle change. */
export interface TrustRestartSettings {
  readonly pacing?: Partial<RestartPacing>;
  /** The Lease's and the status's namespace (default `POD_NAMESPACE` or kyma-system). */
  readonly namespace?: string;
  readonly leaseName?: string;
  readonly leaseTiming?: Partial<LeaderElectionTiming>;
  readonly identity?: string;
  readonly pollMs?: number;
  readonly idleMs?: number;
  /** First delay of a retry, doubling to 60 s (default 5 s). */
  readonly retryBaseMs?: number;
  /** Where the count for the KCP goes (default: the webhook Deployment); false: nowhere. */
  readonly statusDeployment?: string | false;
  /** Gap between status writes (default 30 s). */
  readonly statusMinGapMs?: number;
  /**
   * The namespaces the restarter holds restart rights in (`--restart-namespaces`, rendered as a
   * Role per namespace); undefined: everywhere (the cluster-wide rights, the default). Stale Pods
   * elsewhere are counted and reported once per bundle, never restarted.
   */
  readonly restartNamespaces?: readonly string[];
}

/** The scope of `namespaces` (undefined: everywhere). */
export function restartScopeOf(namespaces: readonly string[] | undefined): RestartScope | undefined {
  if (namespaces === undefined) return undefined;
  const allowed = new Set(namespaces);
  return (namespace) => allowed.has(namespace);
}

/** Starts the restarter for these settings. */
export function startRestarterFromSettings(
  s: TrustRestartSettings,
  parts: {
    readonly access: ClusterAccess;
    readonly bundle: TrustBundleFollower;
    readonly registry: Registry;
    readonly logger: Logger;
  },
): TrustRestarter {
  const namespace = s.namespace ?? (process.env.POD_NAMESPACE || RUNTIME_NAMESPACE);
  const status =
    s.statusDeployment === false
      ? undefined
      : deploymentStatusReporter({
          access: parts.access,
          namespace,
          deployment: s.statusDeployment,
          logger: parts.logger,
          minGapMs: s.statusMinGapMs,
        });
  const restarter = startTrustRestarter({
    ...parts,
    namespace,
    pacing: s.pacing,
    // An empty lease name or identity reads as none: the restarter's default.
    leaseName: s.leaseName || undefined,
    leaseTiming: s.leaseTiming,
    identity: s.identity || undefined,
    pollMs: s.pollMs,
    idleMs: s.idleMs,
    retryBaseMs: s.retryBaseMs,
    mayRestart: restartScopeOf(s.restartNamespaces),
    onStatus: status
      ? (bundle, counts) => {
          status.report(bundle.hash, counts);
        }
      : undefined,
  });
  return {
    ...restarter,
    async stop() {
      status?.stop();
      await restarter.stop();
    },
  };
}
