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
import type { TlsMinVersion } from '../../api/tls-min-version.js';
import { domainOf } from './runtime-domain.js';
import { setObjectKey } from './set-writes.js';

/** Where the KCP listens for drift events, and the names its serving certificate carries. */
export interface DriftEndpointOptions {
  readonly host?: string;
  readonly port?: number;
  /** DNS names and IPs of the listener as runtimes reach it. */
  readonly dnsNames?: readonly string[];
  readonly ipAddresses?: readonly string[];
  /** The oldest TLS version accepted (`--tls-min-version`; default 1.3). */
  readonly minVersion?: TlsMinVersion;
  readonly rateLimit?: { perSecond: number; burst: number };
  /** TLS handshakes in flight at most (default 256) and the time each may take (default 10 s). */
  readonly maxPendingHandshakes?: number;
  readonly handshakeTimeoutMs?: number;
}

const SERVING_VALIDITY_MS = 90 * 24 * 3600_000;
const SERVING_RENEW_BEFORE_MS = 30 * 24 * 3600_000;

/** What the drift endpoint reads. */
export interface DriftEndpointDeps {
  readonly options: DriftEndpointOptions;
  readonly cas: CaStore;
  readonly bootstrappers: ReadonlyStore<RuntimeBootstrapper>;
  /** The key of a runtime's CR (an index: a report must not scan every CR). */
  readonly keyOfRuntime: (runtimeId: string) => string | undefined;
  readonly kubeconfigs: ReadonlyStore<V1Secret>;
  readonly resync: (runtimeId: string, receivedAt: number, object: string) => void;
  /** Attestations of the runtimes (docs/attestation.md). */
  readonly attest: AttestationHandler;
  readonly registry: Registry;
  readonly logger: Logger;
}

/**
 * The KCP end of the drift channel: the mutual-TLS listener, fed with the runtimes direct mode
 * manages (CN = runtime ID, SAN pinned to the runtime's domain); a valid event queues that
 * runtime for an immediate re-sync (`resync`, with the time the report was received and the
 * reported object's {@link setObjectKey}). Built with the other parts, listening from
 * {@link DriftEndpoint.start} (its serving certificate needs the CA loaded).
 */
export class DriftEndpoint {
  readonly name = 'drift listener';
  private readonly hosts = new Map<string, { rv: string; host: string }>();
  private running:
    | {
        listener: EventListener;
        serving: { certPem: string; keyPem: string };
        upkeep: NodeJS.Timeout;
        port: number;
      }
    | undefined;

  constructor(private readonly o: DriftEndpointDeps) {}

  /** The port it listens on (undefined until started). */
  get port(): number | undefined {
    return this.running?.port;
  }

  /** Issues the serving certificate and listens; renews it hourly when due. */
  async start(): Promise<void> {
    const o = this.o;
    const serving = await this.issueServing();
    const listener = new EventListener({
      tls: serving,
      trustedCaPems: o.cas.trusted(),
      host: o.options.host,
      port: o.options.port,
      minVersion: o.options.minVersion,
      rateLimit: o.options.rateLimit,
      maxPendingHandshakes: o.options.maxPendingHandshakes,
      handshakeTimeoutMs: o.options.handshakeTimeoutMs,
      lookupRuntime: (runtimeId) => {
        const key = o.keyOfRuntime(runtimeId);
        const rb = key === undefined ? undefined : o.bootstrappers.get(key);
        return rb ? { domain: domainOf(rb, this.serverHost(rb)) } : undefined;
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
    const upkeep = setInterval(() => {
      void this.refresh().catch((error: unknown) => {
        o.logger.error({ err: error }, 'cannot renew the drift listener certificate');
      });
    }, 3600_000);
    upkeep.unref();
    this.running = { listener, serving, upkeep, port };
    o.logger.info({ port }, 'drift listener serving');
  }

  /** Re-reads the CA store (after a rotation) into the listener's trust and serving certificate. */
  async refresh(): Promise<void> {
    const running = this.running;
    if (!running) return;
    running.listener.setTrustedCas(this.o.cas.trusted());
    if (
      needsRenewal(running.serving.certPem, this.o.cas.current().certPem, new Date(), SERVING_RENEW_BEFORE_MS)
    ) {
      running.serving = await this.issueServing();
      running.listener.setServingCertificate(running.serving);
    }
  }

  /** notAfter (epoch ms) of the certificate served now. */
  servingNotAfter(): number | undefined {
    return this.running ? leafNotAfter(this.running.serving.certPem) : undefined;
  }

  async stop(): Promise<void> {
    const running = this.running;
    this.running = undefined;
    if (!running) return;
    clearInterval(running.upkeep);
    await running.listener.close();
  }

  private serverHost(rb: RuntimeBootstrapper): string {
    const ref = kubeconfigSecretOf(rb);
    const secret = this.o.kubeconfigs.get(`${ref.namespace}/${ref.name}`);
    const rv = secret?.metadata?.resourceVersion ?? '';
    const cached = this.hosts.get(rb.spec.runtimeID);
    if (cached?.rv === rv) return cached.host;
    let host = '';
    try {
      const text = Buffer.from(secret?.data?.[ref.key] ?? '', 'base64').toString();
      const kubeconfig = parse(text) as { clusters?: { cluster?: { server?: string } }[] };
      host = new URL(kubeconfig.clusters?.[0]?.cluster?.server ?? '').hostname;
    } catch {
      host = '';
    }
    this.hosts.set(rb.spec.runtimeID, { rv, host });
    return host;
  }

  private async issueServing(): Promise<{ certPem: string; keyPem: string }> {
    const issued = await issueCertificate(this.o.cas.current(), {
      commonName: 'rt-bootstrapper-drift-listener',
      dnsNames: [...(this.o.options.dnsNames ?? ['localhost'])],
      ipAddresses: [...(this.o.options.ipAddresses ?? ['127.0.0.1'])],
      usage: 'server',
      validityMs: SERVING_VALIDITY_MS,
    });
    return { certPem: issued.certPem, keyPem: issued.keyPem };
  }
}
