/**
 * `rtb webhook`'s settings of the trust-bundle restarter, turned into the restarter with its
 * status reporter (the status lives in the webhook's namespace: `POD_NAMESPACE` or kyma-system).
 * It runs as one part of the runtime agent (../runtime-agent.ts), whose Lease elects it.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import type { RestartPacing } from './restart-actions.js';
import { deploymentStatusReporter } from './restart-status.js';
import type { TrustBundleFollower } from './trust-bundle-follower.js';
import type { RestartScope } from './restart-plan.js';
import { TrustRestarter } from './trust-restarter.js';

/** How the webhook restarts Pods on a trust-bundle change. */
export interface TrustRestartSettings {
  readonly pacing?: Partial<RestartPacing>;
  /** The Events' and the status's namespace (default: the runtime agent's). */
  readonly namespace?: string;
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

/** The restarter for these settings (it acts only in the agent's terms: {@link TrustRestarter.leaderPart}). */
export function trustRestarterOf(
  s: TrustRestartSettings,
  parts: {
    readonly access: ClusterAccess;
    readonly bundle: TrustBundleFollower;
    readonly registry: Registry;
    readonly logger: Logger;
    /** The agent's namespace and identity (the Events name the replica). */
    readonly namespace: string;
    readonly identity: string;
  },
): TrustRestarter {
  const namespace = s.namespace ?? parts.namespace;
  return new TrustRestarter({
    ...parts,
    namespace,
    pacing: s.pacing,
    pollMs: s.pollMs,
    idleMs: s.idleMs,
    retryBaseMs: s.retryBaseMs,
    mayRestart: restartScopeOf(s.restartNamespaces),
    status:
      s.statusDeployment === false
        ? undefined
        : deploymentStatusReporter({
            access: parts.access,
            namespace,
            deployment: s.statusDeployment,
            logger: parts.logger,
            minGapMs: s.statusMinGapMs,
          }),
  });
}
