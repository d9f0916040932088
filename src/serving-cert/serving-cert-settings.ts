/**
 * `rtb webhook`'s settings of its own serving certificate, turned into a running keeper: the
 * Secret (namespace from `POD_NAMESPACE` by default), the Service whose DNS names the
 * certificate covers, extra names or IP addresses, the Lease.
 */
import { isIP } from 'node:net';
import type { Logger } from 'pino';
import {
  RUNTIME_NAMESPACE,
  WEBHOOK_SERVICE,
  WEBHOOK_TLS_SECRET,
  webhookServiceDnsNames,
} from '../api/runtime-names.js';
import type { ClusterAccess } from '../kube/cluster-access.js';
import type { LeaderElectionTiming } from '../kube/leader-election-timing.js';
import type { ServingPolicy } from './serving-policy.js';
import {
  startServingCertKeeper,
  type ServingCertIssuer,
  type ServingCertKeeper,
} from './serving-cert-keeper.js';

/** How the webhook keeps its own serving certificate. */
export interface ServingCertSettings {
  /** Default `<POD_NAMESPACE or kyma-system>/rt-bootstrapper-webhook-tls`. */
  readonly secret?: { readonly namespace: string; readonly name: string };
  /** The Service (in the Secret's namespace) whose DNS names the certificate covers. */
  readonly service?: string;
  /** More names or IP addresses for the certificate (a URL registration, tests). */
  readonly extraSans?: readonly string[];
  /** Who writes the Secret and the caBundle (default `own`; `external` in direct mode: the KCP). */
  readonly issuer?: ServingCertIssuer;
  readonly leaseName?: string;
  readonly leaseTiming?: Partial<LeaderElectionTiming>;
  readonly policy?: ServingPolicy;
  readonly identity?: string;
}

/** The serving Secret by default: `POD_NAMESPACE` (where the Pod runs) or kyma-system. */
export function defaultServingSecret(): { namespace: string; name: string } {
  return { namespace: process.env.POD_NAMESPACE || RUNTIME_NAMESPACE, name: WEBHOOK_TLS_SECRET };
}

/** Starts the keeper for these settings. */
export async function startKeeperFromSettings(
  access: ClusterAccess,
  s: ServingCertSettings,
  logger: Logger,
  onReload: (result: 'success' | 'failure') => void,
): Promise<ServingCertKeeper> {
  const secret = s.secret ?? defaultServingSecret();
  const extra = s.extraSans ?? [];
  return await startServingCertKeeper({
    access,
    secret,
    dnsNames: [
      ...webhookServiceDnsNames(secret.namespace, s.service ?? WEBHOOK_SERVICE),
      ...extra.filter((n) => isIP(n) === 0),
    ],
    ipAddresses: extra.filter((n) => isIP(n) !== 0),
    issuer: s.issuer,
    policy: s.policy,
    // An empty name or identity reads as none: the keeper's default.
    lease: { name: s.leaseName || undefined, timing: s.leaseTiming },
    identity: s.identity || undefined,
    logger,
    onReload,
  });
}
