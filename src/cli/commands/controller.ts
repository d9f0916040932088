import { KubeConfig } from '@kubernetes/client-node';
import { Option, type Command } from 'commander';
import { CONFIG_MAP_KEY, CONFIG_MAP_NAME } from '../../api/webhook-config.js';
import { RUNTIME_NAMESPACE } from '../../api/runtime.js';
import { DEFAULT_STATE_CONFIG_MAP } from '../../controller/annotate/signal-state-store.js';
import type { SignalKind } from '../../controller/annotate/signal-decision.js';
import { modeStarter, startControllerApp } from '../../controller/controller-app.js';
import { CONTROLLER_LEASE_NAME } from '../../render/controller-manifests.js';
import { createLogger } from '../../telemetry/logger.js';

interface ControllerFlags {
  mode: string;
  kubeconfig?: string;
  namespace: string;
  pullSecret: string;
  clusterTrustBundle?: string;
  configMap: string;
  configKey: string;
  runtimeSelector?: string;
  signal: SignalKind;
  coalesce: string;
  concurrency: string;
  resync: string;
  stateConfigMap: string;
  metricsPort: string;
  metricsHost: string;
  leaderElect: boolean;
  leaderElectionId: string;
  leaseDuration: string;
  renewDeadline: string;
  retryPeriod: string;
  logLevel: string;
}

/** A flag value is malformed. */
export class FlagError extends Error {
  override readonly name = 'FlagError';
}

const UNITS: Readonly<Record<string, number>> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Parses a Go-style duration (`500ms`, `2s`, `1m30s`, `1h`) into milliseconds. */
export function parseDuration(text: string): number {
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy;
  let total = 0;
  let matched = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    total += Number(m[1]) * (UNITS[m[2] ?? ''] ?? NaN);
    matched = re.lastIndex;
  }
  if (text === '' || matched !== text.length || !Number.isFinite(total)) {
    throw new FlagError(`invalid duration "${text}" (examples: 500ms, 2s, 1m30s)`);
  }
  return total;
}

function positiveInt(name: string, text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 0)
    throw new FlagError(`--${name} must be a non-negative integer, got "${text}"`);
  return n;
}

/** `rtb controller`: the KCP controller (sources → mode), with leader election. */
export function registerControllerCommand(program: Command): void {
  program
    .command('controller')
    .description('watch the sources on the KCP and propagate changes (runs in the KCP, namespace kcp-system)')
    .addOption(
      new Option('--mode <mode>', 'annotate: signal KIM through Runtimes; direct: sync runtimes directly')
        .choices(['annotate', 'direct'])
        .default('annotate'),
    )
    .option('--kubeconfig <file>', 'kubeconfig of the KCP (default: in-cluster, or $KUBECONFIG)')
    .option(
      '--namespace <namespace>',
      'namespace of the sources, Runtimes, Lease and state',
      RUNTIME_NAMESPACE,
    )
    .requiredOption('--pull-secret <name>', 'the registry pull Secret in the namespace')
    .option('--cluster-trust-bundle <name>', 'the ClusterTrustBundle (not watched when omitted)')
    .option('--config-map <name>', 'the webhook ConfigMap in the namespace', CONFIG_MAP_NAME)
    .option('--config-key <key>', 'the ConfigMap key holding the webhook config', CONFIG_MAP_KEY)
    .option('--runtime-selector <selector>', 'label selector narrowing the Runtimes (default: all)')
    .addOption(
      new Option('--signal <kind>', "annotation (KIM's contract) or label (the seed's wording)")
        .choices(['annotation', 'label'])
        .default('annotation'),
    )
    .option('--coalesce <duration>', 'quiet period that turns a burst of changes into one signal', '2s')
    .option('--concurrency <n>', 'parallel writes to Runtimes', '10')
    .option('--resync <duration>', 're-evaluate the sources this often without events', '5m')
    .option('--state-config-map <name>', "ConfigMap keeping the controller's state", DEFAULT_STATE_CONFIG_MAP)
    .option('--metrics-port <port>', 'HTTP port of /healthz, /readyz and /metrics', '8080')
    .option('--metrics-host <address>', 'listen address of that port', '0.0.0.0')
    .option('--leader-elect', 'run the mode on the Lease holder only (default)', true)
    .option('--no-leader-elect', 'run the mode in this process unconditionally (one replica only)')
    .option('--leader-election-id <name>', 'name of the Lease', CONTROLLER_LEASE_NAME)
    .option('--lease-duration <duration>', 'how long a standby waits before taking an unrenewed Lease', '15s')
    .option(
      '--renew-deadline <duration>',
      'how long the leader tries to renew before it stops working',
      '10s',
    )
    .option('--retry-period <duration>', 'how often candidates and the leader touch the Lease', '2s')
    .option('--log-level <level>', 'log level', 'info')
    .action(async (flags: ControllerFlags) => {
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
    });
}
