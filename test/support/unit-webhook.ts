/** The webhook's HTTPS server alone, without a cluster: caches replaced by fixed answers. */
import { Registry } from 'prom-client';
import { parseWebhookConfig } from '../../src/api/webhook-config.js';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';
import { LogRateLimit } from '../../src/telemetry/log-rate-limit.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { createWebhookMetrics } from '../../src/webhook/webhook-metrics.js';
import { WebhookServer, type WebhookServerOptions } from '../../src/webhook/webhook-server.js';
import { seedConfigText } from './fixtures.js';

/** A server on a free loopback port, with the CA that signed its certificate. */
export interface UnitWebhook {
  readonly server: WebhookServer;
  readonly registry: Registry;
  readonly caPem: string;
  readonly port: number;
}

/**
 * Starts a WebhookServer with the seed configuration (every feature for namespace `kyma-system`,
 * by annotation elsewhere), no namespace annotations and the pull Secret always there.
 */
export async function startUnitWebhook(
  options: Partial<Pick<WebhookServerOptions, 'limits' | 'minVersion'>> & {
    failOpen?: boolean;
    /** Ensures the pull Secret (default: there at once); a promise not yet settled holds the request being decided. */
    ensurePullSecret?: () => Promise<boolean>;
  } = {},
): Promise<UnitWebhook> {
  const ca = await createCertificateAuthority({ commonName: 'unit-webhook-ca' });
  const serving = await issueCertificate(ca, {
    commonName: 'unit-webhook',
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
  const config = parseWebhookConfig(JSON.parse(seedConfigText()));
  const registry = new Registry();
  const logger = silentLogger();
  const server = new WebhookServer({
    tls: { cert: serving.certPem, key: serving.keyPem },
    host: '127.0.0.1',
    port: 0,
    minVersion: options.minVersion,
    registry,
    ready: () => true,
    logger,
    ...(options.limits ? { limits: options.limits } : {}),
    context: {
      config: () => config,
      namespaceAnnotations: () => Promise.resolve({}),
      pullSecret: { ensure: options.ensurePullSecret ?? (() => Promise.resolve(true)) },
      metrics: createWebhookMetrics(registry),
      logger,
      logLimit: new LogRateLimit(logger),
      failOpen: options.failOpen ?? true,
    },
  });
  const port = await server.listen();
  return { server, registry, caPem: ca.certPem, port };
}
