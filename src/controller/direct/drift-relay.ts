/**
 * Drift reports across replicas. The runtimes' forwarders reach any replica (one Service in front
 * of all), but only the owner of a runtime may repair it. A replica that receives a report for a
 * runtime it does not work relays it through the KCP: it stamps the runtime's RuntimeBootstrapper
 * with {@link DRIFT_REPORTED_ANNOTATION}, and the owner's watch turns the change into the same
 * repair a direct report would start. The API server is the bus: no replica needs another's
 * address, the relay is authorised by RBAC, and a report during a handover is not lost (the new
 * owner reconciles the runtime fully when it takes it anyway). The runtime is answered 202 as
 * soon as the report is verified, as for a report to the owner. The annotation holds the time
 * the report was received, so the owner measures the repair from then.
 */
import type { Logger } from 'pino';
import { type RuntimeBootstrapper, runtimeBootstrappersPath } from '../../api/runtime-bootstrapper.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { kubeRequest } from '../../kube/kube-request.js';

/**
 * Annotation a replica sets on a RuntimeBootstrapper to hand a drift report to the runtime's
 * owner: when the report was received (RFC 3339 with milliseconds).
 */
export const DRIFT_REPORTED_ANNOTATION = 'rt-bootstrapper.kyma-project.io/drift-reported-at';

/**
 * When the drift report an update of a RuntimeBootstrapper relays was received (epoch ms);
 * undefined when the update relays none (pure). An unreadable time counts as `fallbackMs`.
 */
export function relayedReportAt(
  old: RuntimeBootstrapper,
  next: RuntimeBootstrapper,
  fallbackMs: number,
): number | undefined {
  const at = next.metadata.annotations?.[DRIFT_REPORTED_ANNOTATION];
  if (at === undefined || at === old.metadata.annotations?.[DRIFT_REPORTED_ANNOTATION]) return undefined;
  const ms = Date.parse(at);
  return Number.isFinite(ms) ? ms : fallbackMs;
}

/** Relays drift reports to their owners; one write in flight per RuntimeBootstrapper. */
export class DriftRelay {
  private readonly inFlight = new Set<string>();

  constructor(
    private readonly kcp: ClusterAccess,
    private readonly logger: Logger,
  ) {}

  /**
   * Stamps the RuntimeBootstrapper `namespace/name` with the time a report was received (epoch
   * ms); a report while one is being written adds nothing.
   */
  relay(key: string, receivedAt: number): void {
    if (this.inFlight.has(key)) return;
    this.inFlight.add(key);
    const [namespace = '', name = ''] = key.split('/');
    kubeRequest(this.kcp, {
      method: 'PATCH',
      path: `${runtimeBootstrappersPath(namespace)}/${encodeURIComponent(name)}`,
      body: {
        metadata: { annotations: { [DRIFT_REPORTED_ANNOTATION]: new Date(receivedAt).toISOString() } },
      },
      timeoutMs: 10_000,
      parseResponse: false,
    })
      .catch((err: unknown) => {
        this.logger.warn({ err, runtimeBootstrapper: key }, 'cannot relay a drift report to its owner');
      })
      .finally(() => {
        this.inFlight.delete(key);
      });
  }
}
