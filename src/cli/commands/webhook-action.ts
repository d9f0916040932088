import { loadClusterAccess } from '../../kube/cluster-access.js';
import { createLogger } from '../../telemetry/logger.js';
import { startWebhookApp, type WebhookAppOptions } from '../../webhook/webhook-app.js';
import { DRAIN_TIMEOUT_SECONDS, TERMINATION_GRACE_SECONDS } from '../../api/serving-limits.js';
import { FlagError, parseDuration, positiveInt, tlsMinVersionOf } from '../flag-values.js';
import { runUntilSignal } from '../run-until-signal.js';
import { logFipsMode, requireFipsMode } from '../../process/fips-mode.js';
import { registryServersOf } from '../flag-values.js';
import { restartNamespacesOf } from './restart-namespaces.js';
import type { TrustRestartSettings } from '../../runtime-agent/trust-restart/restarter-settings.js';

/**
 * The flags of `rtb webhook`. Here with the code that reads them: ./webhook.ts imports the type
 * only, so registering the command loads nothing of this file (and imports nothing back).
 */
export interface WebhookFlags {
  tlsCert?: string;
  tlsKey?: string;
  tlsSecret?: string;
  webhookService: string;
  tlsExtraSan: string[];
  certLease: string;
  servingCertIssuer: string;
  port: string;
  metricsPort?: string;
  host: string;
  /** `1.3` or `1.2`. */
  tlsMinVersion: string;
  /** `--fips`: start only in FIPS mode. */
  fips?: boolean;
  kubeconfig?: string;
  configFile?: string;
  configMap: string;
  configKey: string;
  statusConfigMap?: string;
  failClosed?: boolean;
  landscape?: string;
  logLevel: string;
  driftUrl?: string;
  driftCert: string;
  driftKey: string;
  driftCa: string;
  /** Accepted from manifests of earlier releases, and ignored. */
  reuseAnswers?: string;
  shutdownDelay: string;
  /** false with `--no-trust-restart`. */
  trustRestart: boolean;
  restartConcurrency: string;
  restartDelay: string;
  restartDeadline: string;
  restartLease: string;
  /** Comma-separated; absent: restart rights everywhere. */
  restartNamespaces?: string;
  /** `registry=url`, repeatable. */
  registryServer?: string[];
  /** How often escaped Pods are counted (a duration; absent: the default). */
  escapedInterval?: string;
  /** `--repair-escaped`. */
  repairEscaped?: boolean;
  /** `install`, `report` or `off`. */
  admissionPolicy?: string;
}

/** `rtb webhook`'s settings: every flag parsed and checked; the app's options but its cluster and logger. */
export type WebhookSettings = Omit<WebhookAppOptions, 'kubeConfig' | 'logger'>;

/** Runs `rtb webhook` until SIGTERM or SIGINT, then drains and stops. */
export async function runWebhook(flags: WebhookFlags): Promise<void> {
  if (flags.fips === true) requireFipsMode();
  const delayMs = parseDuration(flags.shutdownDelay);
  const logger = createLogger({ name: 'webhook', level: flags.logLevel });
  if (flags.fips === true) logFipsMode(logger);
  if (flags.reuseAnswers !== undefined)
    logger.warn(
      '--reuse-answers is accepted for manifests of earlier releases and ignored: answers are no longer reused',
    );
  // Every flag before anything connects: a wrong one is refused at once.
  const settings = webhookSettings(flags);
  // Read like client-node's KubeConfig (loadFromFile / loadFromDefault), without loading it.
  const kubeConfig = await loadClusterAccess(flags.kubeconfig);
  const app = await startWebhookApp({ ...settings, kubeConfig, logger });
  const drain = { delayMs, timeoutMs: DRAIN_TIMEOUT_SECONDS * 1000 };
  // Past the grace period the kubelet kills the process anyway; ending a stuck stop a little
  // earlier leaves the reason in the log.
  const hardStopMs = Math.max(TERMINATION_GRACE_SECONDS * 1000, delayMs + drain.timeoutMs + 5_000) - 2_000;
  await runUntilSignal({ stop: () => app.stop(drain) }, logger, 'draining and stopping', hardStopMs);
}

/** The webhook's settings from its flags, resolved once (throws on a wrong one). */
export function webhookSettings(flags: WebhookFlags): WebhookSettings {
  const serving = webhookTlsOptions(flags);
  return {
    configFile: flags.configFile || undefined,
    configMap: { ...namespacedName('--config-map', flags.configMap), key: flags.configKey },
    statusConfigMap:
      flags.statusConfigMap === undefined
        ? undefined
        : namespacedName('--status-config-map', flags.statusConfigMap),
    tls: serving.tls,
    servingCert: serving.servingCert,
    host: flags.host,
    port: Number.parseInt(flags.port, 10),
    tlsMinVersion: tlsMinVersionOf(flags.tlsMinVersion),
    metricsPort: flags.metricsPort === undefined ? undefined : positiveInt('metrics-port', flags.metricsPort),
    // --fail-closed overrides the config's failOpen; otherwise the config decides.
    failOpen: flags.failClosed ? false : undefined,
    landscape: flags.landscape || undefined,
    drift: flags.driftUrl
      ? { url: flags.driftUrl, certFile: flags.driftCert, keyFile: flags.driftKey, caFile: flags.driftCa }
      : undefined,
    trustRestart: trustRestartSettings(flags),
    // The runtime agent's Lease (the restarter's of earlier releases: docs/runtime-agent.md).
    runtimeAgent: { leaseName: flags.restartLease },
    registryServers: registryServersOf(flags.registryServer ?? [], '--registry-server'),
    escapedPods: {
      intervalMs: flags.escapedInterval === undefined ? undefined : parseDuration(flags.escapedInterval),
      repair: flags.repairEscaped === true,
      repairDeadlineMs: parseDuration(flags.restartDeadline),
    },
    admissionPolicy: admissionPolicyOf(flags.admissionPolicy),
  };
}

/** `--admission-policy`: whether the agent installs the policy or only reports the path. */
function admissionPolicyOf(mode: string | undefined): WebhookSettings['admissionPolicy'] {
  switch (mode ?? 'report') {
    case 'install':
      return { install: true };
    case 'report':
      return { install: false };
    case 'off':
      return false;
    default:
      throw new Error(`--admission-policy must be install, report or off, got ${String(mode)}`);
  }
}

/** `namespace/name` of a ConfigMap flag. */
function namespacedName(flag: string, value: string): { namespace: string; name: string } {
  const [namespace, name] = value.split('/');
  if (!namespace || !name) throw new Error(`${flag} must be namespace/name, got ${value}`);
  return { namespace, name };
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
      secret,
      // `own` is the keeper's default, as before: only `external` is passed.
      issuer: issuer === 'external' ? issuer : undefined,
      service: flags.webhookService,
      extraSans: flags.tlsExtraSan,
      leaseName: flags.certLease,
    },
  };
}

/** The restarter's settings from the flags (none with `--no-trust-restart`). */
export function trustRestartSettings(flags: WebhookFlags): TrustRestartSettings | undefined {
  if (!flags.trustRestart) return undefined;
  const concurrency = positiveInt('restart-concurrency', flags.restartConcurrency);
  if (concurrency < 1) throw new FlagError('--restart-concurrency must be at least 1');
  return {
    pacing: {
      concurrency,
      delayMs: parseDuration(flags.restartDelay),
      deadlineMs: parseDuration(flags.restartDeadline),
    },
    restartNamespaces: restartNamespacesOf(flags.restartNamespaces),
  };
}
