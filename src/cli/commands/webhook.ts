import { KubeConfig } from '@kubernetes/client-node';
import type { Command } from 'commander';
import { createLogger } from '../../telemetry/logger.js';
import { startWebhookApp } from '../../webhook/webhook-app.js';

interface WebhookFlags {
  tlsCert: string;
  tlsKey: string;
  port: string;
  host: string;
  kubeconfig?: string;
  configFile?: string;
  configMap: string;
  configKey: string;
  failClosed?: boolean;
  logLevel: string;
  driftUrl?: string;
  driftCert: string;
  driftKey: string;
  driftCa: string;
}

/** `rtb webhook`: the mutating admission webhook of a runtime. */
export function registerWebhookCommand(program: Command): void {
  program
    .command('webhook')
    .description('serve the mutating admission webhook for Pods (runs in each runtime)')
    .option(
      '--tls-cert <file>',
      'serving certificate (PEM); re-read when it changes',
      '/etc/rt-bootstrapper/tls/tls.crt',
    )
    .option(
      '--tls-key <file>',
      'serving key (PEM); re-read when it changes',
      '/etc/rt-bootstrapper/tls/tls.key',
    )
    .option('--port <port>', 'HTTPS port', '9443')
    .option('--host <address>', 'listen address', '0.0.0.0')
    .option('--kubeconfig <file>', 'kubeconfig (default: in-cluster, or $KUBECONFIG)')
    .option('--config-file <file>', 'read the config from this file instead of the ConfigMap')
    .option('--config-map <namespace/name>', 'the config ConfigMap', 'kyma-system/rt-bootstrapper-config')
    .option('--config-key <key>', 'the ConfigMap key', 'rt-bootstrapper-config.json')
    .option(
      '--fail-closed',
      'refuse a Pod when mutating it fails (default: admit it unchanged with a warning)',
    )
    .option('--log-level <level>', 'log level', 'info')
    .option(
      '--drift-url <url>',
      'KCP drift listener (https://host:port); enables reporting tampering with our objects',
    )
    .option('--drift-cert <file>', 'drift client certificate', '/etc/rt-bootstrapper/watcher/tls.crt')
    .option('--drift-key <file>', 'drift client key', '/etc/rt-bootstrapper/watcher/tls.key')
    .option('--drift-ca <file>', 'CA bundle of the KCP listener', '/etc/rt-bootstrapper/watcher/ca.crt')
    .action(async (flags: WebhookFlags) => {
      const logger = createLogger({ name: 'webhook', level: flags.logLevel });
      const kc = new KubeConfig();
      if (flags.kubeconfig) kc.loadFromFile(flags.kubeconfig);
      else kc.loadFromDefault();
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
      await new Promise<void>((resolve) => {
        const onSignal = (signal: string): void => {
          logger.info({ signal }, 'draining and stopping');
          void app.stop().then(resolve, (error: unknown) => {
            logger.error({ err: error }, 'unclean stop');
            resolve();
          });
        };
        process.once('SIGTERM', () => {
          onSignal('SIGTERM');
        });
        process.once('SIGINT', () => {
          onSignal('SIGINT');
        });
      });
    });
}
