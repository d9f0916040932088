/**
 * Finds out whether this runtime can take the trust-bundle mount (../../api/trust-bundle-capability.ts)
 * and keeps the finding current: at start, then every period, sooner while the finding is not
 * known, and at once when asked (the bundle's watch met an upgrade). Each probe asks discovery
 * for the ClusterTrustBundle API version (afresh, and remembers it for the process) and
 * creates the probe Pod with `?dryRun=All` (./probe-pod.ts). The webhook reads the finding
 * on every admission, reports it in its status ConfigMap, and counts it.
 */
import type { Logger } from 'pino';
import {
  API_NOT_SERVED,
  API_UNKNOWN,
  sameCapability,
  type TrustBundleCapability,
} from '../../api/trust-bundle-capability.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { discoveryGet } from '../../kube/api-discovery.js';
import { kubeRequest } from '../../kube/kube-request.js';
import { resourceNames } from '../../kube/served-api.js';
import { TRUST_BUNDLE_GROUP, TRUST_BUNDLE_RESOURCE } from '../../kube/trust-bundle-api.js';
import { trustBundleApis, type TrustBundleApis } from '../../kube/trust-bundle-discovery.js';
import { errorLine } from '../../telemetry/error-line.js';
import { projectionFinding, projectionProbePod } from './probe-pod.js';

/** How the probe runs. */
export interface CapabilityProbeSettings {
  /** Where the probe Pod is created (dry-run): the webhook's namespace. */
  readonly namespace: string;
  /** Between probes once the finding is known (default 10 min). */
  readonly periodMs?: number;
  /** First wait after a probe that found nothing, doubling up to the period (default 15 s). */
  readonly retryMs?: number;
  /** Each request's bound (default 10 s). */
  readonly timeoutMs?: number;
}

/** The finding, kept current. */
export interface CapabilityProber {
  /** The latest finding; undefined until the first probe ended. */
  current(): TrustBundleCapability | undefined;
  /** Called when the finding changes; returns the unsubscribe. */
  onChange(listener: (capability: TrustBundleCapability) => void): () => void;
  /** Probes again soon (coalesced with one already due). */
  refresh(): void;
  stop(): void;
}

/**
 * One probe: discovery, then the dry-run Pod. A discovery or a dry-run that fails (no answer, a
 * policy refusing the Pod, no right to create it) leaves that part `unknown`, with why.
 */
export async function probeCapability(
  access: ClusterAccess,
  settings: Pick<CapabilityProbeSettings, 'namespace' | 'timeoutMs'>,
  apis: TrustBundleApis = trustBundleApis,
): Promise<TrustBundleCapability> {
  const timeoutMs = settings.timeoutMs ?? 10_000;
  const why: string[] = [];
  let api: string;
  let servedVersions: readonly string[] | undefined;
  try {
    const found = await apis.refresh(access);
    api = found.served ? found.apiVersion : API_NOT_SERVED;
    if (!found.served) why.push(found.found);
    // Kubelets before 1.37 read v1beta1 only: whether it is served beside v1 decides for them.
    else if (found.version === 'v1' && (await alsoServesV1beta1(access, timeoutMs)))
      servedVersions = ['v1', 'v1beta1'];
  } catch (error) {
    api = API_UNKNOWN;
    why.push(errorLine(error));
  }
  let projection: TrustBundleCapability['projection'];
  try {
    const answer = await kubeRequest<unknown>(access, {
      method: 'POST',
      path: `/api/v1/namespaces/${encodeURIComponent(settings.namespace)}/pods`,
      query: { dryRun: 'All' },
      body: projectionProbePod(settings.namespace),
      timeoutMs,
    });
    projection = projectionFinding(answer);
    if (projection === 'unknown') why.push('the dry-run Pod came back without the probe volume');
  } catch (error) {
    projection = 'unknown';
    why.push(`the dry-run probe Pod failed: ${errorLine(error)}`);
  }
  const detail = why.join('; ').slice(0, 1_000);
  return {
    api,
    projection,
    detail: detail === '' ? undefined : detail,
    servedVersions,
  };
}

/**
 * Whether `certificates.k8s.io/v1beta1` lists ClusterTrustBundles too (one discovery GET). Any
 * failure reads as no: older kubelets are then held to v1, which keeps the mount off rather than
 * letting Pods fail to start.
 */
async function alsoServesV1beta1(access: ClusterAccess, timeoutMs: number): Promise<boolean> {
  try {
    const list = await discoveryGet(access, timeoutMs)(`/apis/${TRUST_BUNDLE_GROUP}/v1beta1`);
    return resourceNames(list).includes(TRUST_BUNDLE_RESOURCE);
  } catch {
    return false;
  }
}

/** Starts probing; the first probe starts at once. */
export function startCapabilityProber(o: CapabilityProberOptions): CapabilityProber {
  const prober = capabilityProber(o);
  prober.start();
  return prober;
}

/** Settings of a {@link CapabilityProber}. */
export interface CapabilityProberOptions {
  readonly access: ClusterAccess;
  readonly settings: CapabilityProbeSettings;
  readonly logger: Logger;
  readonly apis?: TrustBundleApis;
}

/** A prober not started yet: the first probe starts with `start()`. */
export function capabilityProber(o: CapabilityProberOptions): CapabilityProber & { start(): void } {
  const periodMs = o.settings.periodMs ?? 10 * 60_000;
  const retryBaseMs = o.settings.retryMs ?? 15_000;
  const listeners = new Set<(capability: TrustBundleCapability) => void>();
  let known: TrustBundleCapability | undefined;
  let retryMs = retryBaseMs;
  let timer: NodeJS.Timeout | undefined;
  let running = false;
  let again = false;
  let stopped = false;

  const schedule = (ms: number): void => {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(run, ms);
    timer.unref();
  };
  const run = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = true;
    clearTimeout(timer);
    void probeCapability(o.access, o.settings, o.apis).then((found) => {
      running = false;
      if (stopped) return;
      const settled = found.api !== API_UNKNOWN && found.projection !== 'unknown';
      const wait = settled ? periodMs : retryMs;
      retryMs = settled ? retryBaseMs : Math.min(retryMs * 2, periodMs);
      if (!sameCapability(found, known)) {
        const log = found.api === API_NOT_SERVED || found.projection === 'dropped' ? 'warn' : 'info';
        o.logger[log]({ ...found }, 'trust-bundle capability of this runtime');
        known = found;
        for (const l of [...listeners]) {
          try {
            l(found);
          } catch (error) {
            o.logger.error({ err: error }, 'trust-bundle capability listener threw');
          }
        }
      }
      if (again) {
        again = false;
        run();
      } else schedule(wait);
    });
  };
  return {
    start: run,
    current: () => known,
    onChange: (listener) => {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
    refresh: () => {
      if (running) again = true;
      else schedule(0);
    },
    stop: () => {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
