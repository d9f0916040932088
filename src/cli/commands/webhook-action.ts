import { loadClusterAccess } from '../../kube/cluster-access.js';
import { createLogger } from '../../telemetry/logger.js';
import { startWebhookApp } from '../../webhook/webhook-app.js';
import { positiveInt } from './controller.js';
import type { WebhookFlags } from './webhook.js';
import { runUntilSignal } from '../run-until-signal.js';

/** Runs `rtb webhook` until SIGTERM or SIGINT, then drains and stops. */
export async function runWebhook(flags: WebhookFlags): Promise<void> {
  const reuseAnswers = positiveInt('reuse-answers', flags.reuseAnswers);
  const logger = createLogger({ name: 'webhook', level: flags.logLevel });
  // Read like client-node's KubeConfig (loadFromFile / loadFromDefault), without loading it.
  const kc = await loadClusterAccess(flags.kubeconfig);
  const [namespace, name] = flags.configMap.split('/');
  if (!namespace || !name) throw new Error(`--config-map must be namespace/name, got ${flags.configMap}`);
  const app = await startWebhookApp({
    kubeConfig: kc,
    tls: { certFile: flags.tlsCert, keyFile: flags.tlsKey },
    ...(flags.configFile ? { configFile: flags.configFile } : {}),
    configMap: { namespace, name, key: flags.configKey },
    host: flags.host,
    port: Number.parseInt(flags.port, 10),
    ...(flags.failClosed ? { failOpen: false } : {}),
    ...(flags.landscape ? { landscape: flags.landscape } : {}),
    reuseAnswers,
    ...(flags.driftUrl
      ? {
          drift: {
            url: flags.driftUrl,
            certFile: flags.driftCert,
            keyFile: flags.driftKey,
            caFile: flags.driftCa,
          },
        }
      : {}),
    logger,
  });
  await runUntilSignal(app, logger, 'draining and stopping');
}
