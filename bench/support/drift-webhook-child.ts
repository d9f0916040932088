// A runtime's webhook with the drift channel, as its own process (what `rtb webhook
// --drift-url …` runs, started through the app so the benchmark does not depend on the CLI's
// flags): it serves /validate, which the runtime's API server calls for writes to our objects,
// and forwards drift to the KCP listener over mutual TLS. `/metrics` on its HTTPS port.
//
//   node drift-webhook-child.js <config.json>    (see DriftWebhookConfig)
import { KubeConfig } from '@kubernetes/client-node';
import { createLogger } from '../../src/telemetry/logger.js';
import { startWebhookApp } from '../../src/webhook/webhook-app.js';
import { childConfig, runChild } from './child-main.js';

/** What the parent asks for. */
export interface DriftWebhookConfig {
  readonly kubeconfigPath: string;
  readonly certFile: string;
  readonly keyFile: string;
  readonly port: number;
  readonly drift: {
    readonly url: string;
    readonly certFile: string;
    readonly keyFile: string;
    readonly caFile: string;
  };
}

async function main(): Promise<void> {
  const c = childConfig('drift-webhook-child.js') as DriftWebhookConfig;
  const logger = createLogger({ name: 'webhook', level: 'info' });
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromFile(c.kubeconfigPath);
  const app = await startWebhookApp({
    kubeConfig,
    tls: { certFile: c.certFile, keyFile: c.keyFile },
    host: '127.0.0.1',
    port: c.port,
    drift: c.drift,
    logger,
  });
  const stop = (): void => {
    const hard = setTimeout(() => process.exit(1), 10_000);
    hard.unref();
    void app.stop().then(() => process.exit(0));
  };
  process.once('SIGTERM', stop);
  process.once('SIGINT', stop);
  const parent = process.ppid;
  setInterval(() => {
    if (process.ppid !== parent) stop();
  }, 1_000).unref();
}

runChild('webhook child failed', main);
