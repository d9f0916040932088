import { KubeConfig } from '@kubernetes/client-node';
import { modeStarter, startControllerApp } from '../../controller/controller-app.js';
import { createLogger } from '../../telemetry/logger.js';
import { FlagError, parseDuration, positiveInt, type ControllerFlags } from './controller.js';

/** Runs `rtb controller` until SIGTERM or SIGINT. */
export async function runController(flags: ControllerFlags): Promise<void> {
  modeStarter(flags.mode); // fail on an unavailable mode before touching the cluster
  const logger = createLogger({ name: 'controller', level: flags.logLevel });
  const kc = new KubeConfig();
  if (flags.kubeconfig) kc.loadFromFile(flags.kubeconfig);
  else kc.loadFromDefault();
  const concurrency = positiveInt('concurrency', flags.concurrency);
  if (concurrency < 1) throw new FlagError('--concurrency must be at least 1');
  const app = await startControllerApp({
    kubeConfig: kc,
    namespace: flags.namespace,
    pullSecretName: flags.pullSecret,
    ...(flags.clusterTrustBundle ? { clusterTrustBundleName: flags.clusterTrustBundle } : {}),
    configMapName: flags.configMap,
    configMapKey: flags.configKey,
    mode: flags.mode,
    modeOptions: {
      ...(flags.runtimeSelector ? { runtimeSelector: flags.runtimeSelector } : {}),
      signal: flags.signal,
      coalesceMs: parseDuration(flags.coalesce),
      concurrency,
      resyncMs: parseDuration(flags.resync),
      stateConfigMapName: flags.stateConfigMap,
    },
    leaderElection: flags.leaderElect
      ? {
          leaseName: flags.leaderElectionId,
          timing: {
            leaseDurationMs: parseDuration(flags.leaseDuration),
            renewDeadlineMs: parseDuration(flags.renewDeadline),
            retryPeriodMs: parseDuration(flags.retryPeriod),
          },
        }
      : false,
    host: flags.metricsHost,
    port: positiveInt('metrics-port', flags.metricsPort),
    logger,
  });
  await new Promise<void>((resolve) => {
    const onSignal = (signal: string): void => {
      logger.info({ signal }, 'stopping');
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
}
