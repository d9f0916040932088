import { loadClusterAccess } from '../../kube/cluster-access.js';
import { createLogger } from '../../telemetry/logger.js';
import { startWebhookApp, type WebhookAppOptions } from '../../webhook/webhook-app.js';
import { DRAIN_TIMEOUT_SECONDS, TERMINATION_GRACE_SECONDS } from '../../api/serving-limits.js';
import { FlagError, parseDuration, positiveInt } from '../flag-values.js';
import type { WebhookFlags } from './webhook-flags.js';
import { runUntilSignal } from '../run-until-signal.js';
import { restartNamespacesOf } from './restart-namespaces.js';

/** Runs `rtb webhook` until SIGTERM or SIGINT, then drains and stops. */
export async function runWebhook(flags: WebhookFlags): Promise<void> {
  const delayMs = parseDuration(flags.shutdownDelay);
  const logger = createLogger({ name: 'webhook', level: flags.logLevel });
  if (flags.reuseAnswers !== undefined)
    logger.warn(
      '--reuse-answers is accepted for manifests of earlier releases and ignored: answers are no longer reused',
    );
  // Read like client-node's KubeConfig (loadFromFile / loadFromDefault), without loading it.
  const kc = await loadClusterAccess(flags.kubeconfig);
  const [namespace, name] = flags.configMap.split('/');
  if (!namespace || !name) throw new Error(`--config-map must be namespace/name, got ${flags.configMap}`);
  const [statusNamespace, statusName] = (flags.statusConfigMap ?? '').split('/');
  if (flags.statusConfigMap !== undefined && (!statusNamespace || !statusName))
    throw new Error(`--status-config-map must be namespace/name, got ${flags.statusConfigMap}`);
  const app = await startWebhookApp({
    kubeConfig: kc,
    ...(statusNamespace && statusName
      ? { statusConfigMap: { namespace: statusNamespace, name: statusName } }
      : {}),
    ...webhookTlsOptions(flags),
    ...(flags.configFile ? { configFile: flags.configFile } : {}),
    configMap: { namespace, name, key: flags.configKey },
    host: flags.host,
    port: Number.parseInt(flags.port, 10),
    ...(flags.metricsPort !== undefined
      ? { metricsPort: positiveInt('metrics-port', flags.metricsPort) }
      : {}),
    ...(flags.failClosed ? { failOpen: false } : {}),
    ...(flags.landscape ? { landscape: flags.landscape } : {}),
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
    ...trustRestartOptions(flags),
    logger,
  });
  const drain = { delayMs, timeoutMs: DRAIN_TIMEOUT_SECONDS * 1000 };
  // Past the grace period the kubelet kills the process anyway; ending a stuck stop a little
  // earlier leaves the reason in the log.
  const hardStopMs = Math.max(TERMINATION_GRACE_SECONDS * 1000, delayMs + drain.timeoutMs + 5_000) - 2_000;
  await runUntilSignal({ stop: () => app.stop(drain) }, logger, 'draining and stopping', hardStopMs);
}

/**
 * Certificate files when given (served as they are, e.g. the local landscape); otherwise the
 * webhook keeps its own certificate in the Secret.
 */
export function webhookTlsOptions(flags: WebhookFlags): Pick<WebhookAppOptions, 'tls' | 'servingCert'> {
  if (flags.tlsCert !== undefined || flags.tlsKey !== undefined) {
    if (flags.tlsCert === undefined || flags.tlsKey === undefined)
      throw new Error(
        '--tls-cert and --tls-key go together: give both, or neither to keep an own certificate',
      );
    return { tls: { certFile: flags.tlsCert, keyFile: flags.tlsKey } };
  }
  let secret: { namespace: string; name: string } | undefined;
  if (flags.tlsSecret !== undefined) {
    const [namespace, name, extra] = flags.tlsSecret.split('/');
    if (!namespace || !name || extra !== undefined)
      throw new Error(`--tls-secret must be namespace/name, got ${flags.tlsSecret}`);
    secret = { namespace, name };
  }
  const issuer = flags.servingCertIssuer;
  if (issuer !== 'own' && issuer !== 'external')
    throw new Error(`--serving-cert-issuer must be own or external, got ${issuer}`);
  return {
    servingCert: {
      ...(secret ? { secret } : {}),
      ...(issuer === 'external' ? { issuer } : {}),
      service: flags.webhookService,
      extraSans: flags.tlsExtraSan,
      leaseName: flags.certLease,
    },
  };
}

/** The restarter's settings from the flags (none with `--no-trust-restart`). */
export function trustRestartOptions(flags: WebhookFlags): Pick<WebhookAppOptions, 'trustRestart'> {
  if (!flags.trustRestart) return {};
  const concurrency = positiveInt('restart-concurrency', flags.restartConcurrency);
  if (concurrency < 1) throw new FlagError('--restart-concurrency must be at least 1');
  return {
    trustRestart: {
      pacing: {
        concurrency,
        delayMs: parseDuration(flags.restartDelay),
        deadlineMs: parseDuration(flags.restartDeadline),
      },
      leaseName: flags.restartLease,
      restartNamespaces: restartNamespacesOf(flags.restartNamespaces),
    },
  };
}
