import type { V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { parse } from 'yaml';
import { kubeconfigSecretOf, type RuntimeBootstrapper } from '../../api/runtime-bootstrapper.js';
import type { ReadonlyStore } from '../../kube/store.js';
import type { CaStore } from '../../pki/ca-store.js';
import { issueCertificate } from '../../pki/issue-certificate.js';
import { needsRenewal } from '../../pki/renewal.js';
import { leafNotAfter } from '../../pki/certificate-expiry.js';
import type { AttestationHandler } from '../../drift/attestation-receiver.js';
import { EventListener } from '../../drift/event-listener.js';
import { domainOf } from './runtime-domain.js';
import { setObjectKey } from './set-writes.js';

/** Where the KCP listens for drift events, and the names its serving certificate carries. */
export interface DriftEndpointOptions {
  readonly host?: string;
  readonly port?: number;
  /** DNS names and IPs of the listener as runtimes reach it. */
  readonly dnsNames?: readonly string[];
  readonly ipAddresses?: readonly string[];
  readonly rateLimit?: { perSecond: number; burst: number };
  /** TLS handshakes in flight at most (default 256) and the time each may take (default 10 s). */
  readonly maxPendingHandshakes?: number;
  readonly handshakeTimeoutMs?: number;
}

/** The running listener with its upkeep. */
export interface DriftEndpoint {
  readonly port: number;
  /** Re-reads the CA store (after a rotation) into the listener's trust and serving certificate. */
  refresh(): Promise<void>;
  /** notAfter (epoch ms) of the certificate served now. */
  servingNotAfter(): number | undefined;
  stop(): Promise<void>;
}

const SERVING_VALIDITY_MS = 90 * 24 * 3600_000;
const SERVING_RENEW_BEFORE_MS = 30 * 24 * 3600_000;

/**
 * The KCP end of the drift channel: the mutual-TLS listener, fed with the runtimes direct mode
 * manages (CN = runtime ID, SAN pinned to the runtime's domain); a valid event queues that
 * runtime for an immediate re-sync (`resync`, with the time the report was received and the
 * reported object's {@link setObjectKey}).
 */
export async function startDriftEndpoint(o: {
  options: DriftEndpointOptions;
  cas: CaStore;
  bootstrappers: ReadonlyStore<RuntimeBootstrapper>;
  /** The key of a runtime's CR (an index: a report must not scan every CR). */
  keyOfRuntime: (runtimeId: string) => string | undefined;
  kubeconfigs: ReadonlyStore<V1Secret>;
  resync: (runtimeId: string, receivedAt: number, object: string) => void;
  /** Attestations of the runtimes (docs/attestation.md). */
  attest: AttestationHandler;
  registry: Registry;
  logger: Logger;
}): Promise<DriftEndpoint> {
  const hosts = new Map<string, { rv: string; host: string }>();
  const serverHost = (rb: RuntimeBootstrapper): string => {
    const ref = kubeconfigSecretOf(rb);
    const secret = o.kubeconfigs.get(`${ref.namespace}/${ref.name}`);
    const rv = secret?.metadata?.resourceVersion ?? '';
    const cached = hosts.get(rb.spec.runtimeID);
    if (cached?.rv === rv) return cached.host;
    let host = '';
    try {
      const text = Buffer.from(secret?.data?.[ref.key] ?? '', 'base64').toString();
      const kubeconfig = parse(text) as { clusters?: { cluster?: { server?: string } }[] };
      host = new URL(kubeconfig.clusters?.[0]?.cluster?.server ?? '').hostname;
    } catch {
      host = '';
    }
    hosts.set(rb.spec.runtimeID, { rv, host });
    return host;
  };
  const issueServing = async (): Promise<{ certPem: string; keyPem: string }> => {
    const issued = await issueCertificate(o.cas.current(), {
      commonName: 'rt-bootstrapper-drift-listener',
      dnsNames: [...(o.options.dnsNames ?? ['localhost'])],
      ipAddresses: [...(o.options.ipAddresses ?? ['127.0.0.1'])],
      usage: 'server',
      validityMs: SERVING_VALIDITY_MS,
    });
    return { certPem: issued.certPem, keyPem: issued.keyPem };
  };
  let serving = await issueServing();
  const listener = new EventListener({
    tls: serving,
    trustedCaPems: o.cas.trusted(),
    ...(o.options.host !== undefined ? { host: o.options.host } : {}),
    ...(o.options.port !== undefined ? { port: o.options.port } : {}),
    ...(o.options.rateLimit ? { rateLimit: o.options.rateLimit } : {}),
    ...(o.options.maxPendingHandshakes !== undefined
      ? { maxPendingHandshakes: o.options.maxPendingHandshakes }
      : {}),
    ...(o.options.handshakeTimeoutMs !== undefined
      ? { handshakeTimeoutMs: o.options.handshakeTimeoutMs }
      : {}),
    lookupRuntime: (runtimeId) => {
      const key = o.keyOfRuntime(runtimeId);
      const rb = key === undefined ? undefined : o.bootstrappers.get(key);
      return rb ? { domain: domainOf(rb, serverHost(rb)) } : undefined;
    },
    onEvent: (runtimeId, event, receivedAt) => {
      const object = setObjectKey({
        kind: event.watchedGvk.kind,
        metadata: { namespace: event.watched.Namespace, name: event.watched.Name },
      });
      o.resync(runtimeId, receivedAt, object);
      o.logger.info(
        { runtime: runtimeId, watched: event.watched, kind: event.watchedGvk.kind },
        'drift reported; re-syncing',
      );
    },
    onAttestation: o.attest,
    registry: o.registry,
    logger: o.logger.child({ part: 'drift-listener' }),
  });
  const port = await listener.listen();
  const refresh = async (): Promise<void> => {
    listener.setTrustedCas(o.cas.trusted());
    if (needsRenewal(serving.certPem, o.cas.current().certPem, new Date(), SERVING_RENEW_BEFORE_MS)) {
      serving = await issueServing();
      listener.setServingCertificate(serving);
    }
  };
  const upkeep = setInterval(() => {
    void refresh().catch((error: unknown) => {
      o.logger.error({ err: error }, 'cannot renew the drift listener certificate');
    });
  }, 3600_000);
  upkeep.unref();
  o.logger.info({ port }, 'drift listener serving');
  return {
    port,
    refresh,
    servingNotAfter: () => leafNotAfter(serving.certPem),
    async stop() {
      clearInterval(upkeep);
      await listener.close();
    },
  };
}
