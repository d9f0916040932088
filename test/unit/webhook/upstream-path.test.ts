import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Registry } from 'prom-client';
import { parseWebhookConfig } from '../../../src/api/webhook-config.js';
import { createCertificateAuthority } from '../../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../../src/pki/issue-certificate.js';
import { LogRateLimit } from '../../../src/telemetry/log-rate-limit.js';
import { createLogger } from '../../../src/telemetry/logger.js';
import { createWebhookMetrics } from '../../../src/webhook/webhook-metrics.js';
import { podReview } from '../../support/fixtures.js';
import { httpsCall, type Reply } from '../../support/https-call.js';
import { MUTATE_PATH, MUTATE_PATH_UPSTREAM } from '../../../src/api/runtime-names.js';
import { WebhookServer } from '../../../src/webhook/webhook-server.js';

let server: WebhookServer;
let caPem: string;

const post = (path: string, body: string): Promise<Reply> =>
  httpsCall({ port: server.port, caPem, path, body, servername: 'localhost' });

const review = podReview({
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'p', annotations: { 'rt-cfg.kyma-project.io/set-fips-mode': 'true' } },
  spec: { containers: [{ name: 'c', image: 'nginx' }] },
});

describe("the webhook answers on upstream's path too", () => {
  before(async () => {
    const ca = await createCertificateAuthority({ commonName: 'upstream-path-test-ca' });
    caPem = ca.certPem;
    const serving = await issueCertificate(ca, { commonName: 'w', dnsNames: ['localhost'], usage: 'server' });
    const config = parseWebhookConfig({
      overrides: {},
      availableFeatures: ['rt-cfg.kyma-project.io/set-fips-mode'],
    });
    const logger = createLogger({ name: 'test', level: 'silent' });
    server = new WebhookServer({
      tls: { cert: serving.certPem, key: serving.keyPem },
      host: '127.0.0.1',
      port: 0,
      registry: new Registry(),
      ready: () => true,
      logger,
      context: {
        config: () => config,
        namespaceAnnotations: () => Promise.resolve({}),
        pullSecret: { ensure: () => Promise.resolve(true) },
        metrics: createWebhookMetrics(new Registry()),
        logger,
        logLimit: new LogRateLimit(logger),
        failOpen: true,
      },
    });
    await server.listen();
  });
  after(async () => {
    await server.close({ timeoutMs: 1000 });
  });

  test("MUTATE_PATH_UPSTREAM is controller-runtime's path for Pods", () => {
    assert.equal(MUTATE_PATH_UPSTREAM, '/mutate--v1-pod');
  });

  test('the same answer on both paths', async () => {
    const ours = await post(MUTATE_PATH, review);
    const upstream = await post(MUTATE_PATH_UPSTREAM, review);
    assert.equal(ours.status, 200);
    assert.equal(upstream.status, 200);
    assert.deepEqual(JSON.parse(upstream.body), JSON.parse(ours.body));
    const response = (JSON.parse(upstream.body) as { response: { allowed: boolean; patch?: string } })
      .response;
    assert.equal(response.allowed, true);
    assert.match(Buffer.from(response.patch ?? '', 'base64').toString(), /FIPS_MODE_ENABLED/);
  });

  test('a query string is ignored on the upstream path as on ours; a longer path is not it', async () => {
    assert.equal((await post(`${MUTATE_PATH_UPSTREAM}?timeout=10s`, review)).status, 200);
    assert.equal((await post('/mutate--v1-podx', review)).status, 404);
  });
});
