import { KubeConfig } from '@kubernetes/client-node';
import {
  defaultIdentity,
  startControllerApp,
  type ControllerAppOptions,
} from '../../controller/controller-app.js';
import { startAnnotateMode } from '../../controller/annotate/annotate-mode.js';
import { DEFAULT_ANNOTATE_CONCURRENCY, type ModeOptions, type ModeStarter } from '../../controller/mode.js';
import { directModeStarter, type DirectModeStarterSettings } from '../../controller/direct/direct-mode.js';
import {
  DEFAULT_DIRECT_CONCURRENCY,
  DEFAULT_DIRECT_RESYNC_MS,
} from '../../controller/direct/direct-mode-options.js';
import type { DirectShardSettings } from '../../controller/direct/sharded-work.js';
import type { LeaderElectionTiming } from '../../kube/leader-election-timing.js';
import { KCP_SERVING_POLICY } from '../../serving-cert/serving-policy.js';
import { packageVersion, releaseImage } from '../../version.js';
import { createLogger } from '../../telemetry/logger.js';
import { FlagError, parseDuration, positiveInt, registryServersOf, tlsMinVersionOf } from '../flag-values.js';
import type { SignalKind } from '../../controller/annotate/signal-decision.js';
import { runUntilSignal } from '../run-until-signal.js';
import { logFipsMode, requireFipsMode } from '../../process/fips-mode.js';
import { restartNamespacesOf } from './restart-namespaces.js';
import { CONTROLLER_GRACE_SECONDS } from '../../api/kcp-objects.js';

/**
 * The flags of `rtb controller`. Here with the code that reads them: ./controller.ts imports the type
 * only, so registering the command loads nothing of this file (and imports nothing back).
 */
export interface ControllerFlags {
  /** Commander's choices: annotate or direct. */
  mode: 'annotate' | 'direct';
  kubeconfig?: string;
  namespace: string;
  pullSecret: string;
  clusterTrustBundle?: string;
  configMap: string;
  configKey: string;
  manifestsConfigMap?: string;
  runtimeSelector?: string;
  signal: SignalKind;
  coalesce: string;
  /** Unset: the mode's default. */
  concurrency?: string;
  /** Unset: the mode's default (10m direct, 5m annotate). */
  resync?: string;
  stateConfigMap: string;
  metricsPort: string;
  metricsHost: string;
  leaderElect: boolean;
  /** Direct mode: every replica works its share (a Lease each) instead of leader election. */
  sharding?: boolean;
  leaderElectionId: string;
  leaseDuration: string;
  renewDeadline: string;
  retryPeriod: string;
  logLevel: string;
  /** `--fips`: start only in FIPS mode. */
  fips?: boolean;
  webhookImage?: string;
  webhookPriorityClassName?: string;
  /** Comma-separated: the webhook's restart rights per namespace. */
  webhookRestartNamespaces?: string;
  /** `registry=url`, repeatable. */
  webhookRegistryServer?: string[];
  webhookVersion?: string;
  autoCreate?: string | boolean;
  driftListen?: string;
  /** `1.3` or `1.2`. */
  tlsMinVersion: string;
  driftUrl?: string;
  driftDnsNames?: string;
  caRenewBefore: string;
  caGrace: string;
  runtimeTimeout: string;
  runtimeDeadline: string;
  fullResyncEvery: string;
  rolloutPolicy: string;
  /** false with --no-auto-rollback. */
  autoRollback: boolean;
  certValidity: string;
  certRenewBefore: string;
  /** Direct mode: `--per-runtime-metrics`. */
  perRuntimeMetrics?: boolean;
}

/**
 * After SIGTERM, a controller still stopping this long ends itself (status 1) before the kubelet's
 * SIGKILL, so the log says so: whatever a stop waits for, the process never outlives its grace.
 */
const CONTROLLER_HARD_STOP_MS = (CONTROLLER_GRACE_SECONDS - 2) * 1000;

/** Annotate mode re-evaluates the sources this often without events (`--resync`'s default there). */
const DEFAULT_ANNOTATE_RESYNC_MS = 5 * 60_000;

/** `rtb controller`'s settings: every flag parsed, checked and defaulted; the app's options but its cluster and logger. */
export type ControllerSettings = Omit<ControllerAppOptions, 'kubeConfig' | 'logger'>;

/** Runs `rtb controller` until SIGTERM or SIGINT. */
export async function runController(flags: ControllerFlags): Promise<void> {
  if (flags.fips === true) requireFipsMode();
  // Every flag first: a wrong one is refused before anything connects.
  const settings = controllerSettings(flags);
  const logger = createLogger({ name: 'controller', level: flags.logLevel });
  if (flags.fips === true) logFipsMode(logger);
  const kubeConfig = new KubeConfig();
  if (flags.kubeconfig) kubeConfig.loadFromFile(flags.kubeconfig);
  else kubeConfig.loadFromDefault();
  const app = await startControllerApp({ ...settings, kubeConfig, logger });
  await runUntilSignal(app, logger, 'stopping', CONTROLLER_HARD_STOP_MS);
}

/** The controller's settings from its flags, resolved once (throws FlagError on a wrong one). */
export function controllerSettings(flags: ControllerFlags): ControllerSettings {
  if (flags.sharding === true && flags.mode !== 'direct')
    throw new FlagError('--sharding works in direct mode only (annotate mode runs on one leader)');
  const identity = defaultIdentity();
  const timing: LeaderElectionTiming = {
    leaseDurationMs: parseDuration(flags.leaseDuration),
    renewDeadlineMs: parseDuration(flags.renewDeadline),
    retryPeriodMs: parseDuration(flags.retryPeriod),
  };
  const modeOptions: ModeOptions = {
    runtimeSelector: flags.runtimeSelector || undefined,
    signal: flags.signal,
    coalesceMs: parseDuration(flags.coalesce),
    concurrency: concurrencyOf(flags),
    resyncMs: resyncMsOf(flags),
    stateConfigMapName: flags.stateConfigMap,
  };
  // Sharded, every replica runs direct mode on its own Lease (no leader election).
  const shard: DirectShardSettings | undefined = flags.sharding === true ? { identity, timing } : undefined;
  let starter: ModeStarter;
  switch (flags.mode) {
    case 'annotate':
      starter = startAnnotateMode;
      break;
    case 'direct':
      starter = directModeStarter(directSettings(flags, shard));
      break;
  }
  return {
    namespace: flags.namespace,
    pullSecretName: flags.pullSecret,
    clusterTrustBundleName: flags.clusterTrustBundle || undefined,
    configMapName: flags.configMap,
    configMapKey: flags.configKey,
    manifestsConfigMapName: flags.manifestsConfigMap || undefined,
    mode: flags.mode,
    starter,
    modeOptions,
    leaderElection:
      flags.leaderElect && shard === undefined ? { leaseName: flags.leaderElectionId, timing } : false,
    identity,
    host: flags.metricsHost,
    port: positiveInt('metrics-port', flags.metricsPort),
  };
}

/** `--concurrency`, or the mode's default. */
function concurrencyOf(flags: ControllerFlags): number {
  const concurrency = positiveInt(
    'concurrency',
    flags.concurrency ??
      String(flags.mode === 'direct' ? DEFAULT_DIRECT_CONCURRENCY : DEFAULT_ANNOTATE_CONCURRENCY),
  );
  if (concurrency < 1) throw new FlagError('--concurrency must be at least 1');
  return concurrency;
}

/** `--resync`, or the mode's default. */
function resyncMsOf(flags: ControllerFlags): number {
  if (flags.resync !== undefined) return parseDuration(flags.resync);
  return flags.mode === 'direct' ? DEFAULT_DIRECT_RESYNC_MS : DEFAULT_ANNOTATE_RESYNC_MS;
}

/** Direct mode's settings from the flags (its share of the runtimes when sharded). */
export function directSettings(
  flags: ControllerFlags,
  shard: DirectShardSettings | undefined,
): DirectModeStarterSettings {
  const version = flags.webhookVersion ?? packageVersion();
  const fullResyncEvery = positiveInt('full-resync-every', flags.fullResyncEvery);
  if (fullResyncEvery < 1) throw new FlagError('--full-resync-every must be at least 1');
  return {
    release: {
      image: flags.webhookImage ?? releaseImage(version),
      version,
      priorityClassName: flags.webhookPriorityClassName,
      restartNamespaces: restartNamespacesOf(flags.webhookRestartNamespaces, '--webhook-restart-namespaces'),
      registryServers: registryServersOf(flags.webhookRegistryServer ?? [], '--webhook-registry-server'),
    },
    autoCreateSelector: autoCreateSelectorOf(flags.autoCreate),
    drift: flags.driftUrl
      ? {
          listenerUrl: flags.driftUrl,
          clientValidityMs: parseDuration(flags.certValidity),
          renewBeforeMs: parseDuration(flags.certRenewBefore),
        }
      : undefined,
    // The serving certificate renews at half its life (the protocol's KCP policy), not by --cert-renew-before.
    servingPolicy: { ...KCP_SERVING_POLICY, servingLifetimeMs: parseDuration(flags.certValidity) },
    driftListener: driftListenerOf(flags),
    caRotation: { renewBeforeMs: parseDuration(flags.caRenewBefore), graceMs: parseDuration(flags.caGrace) },
    runtimeTimeoutMs: parseDuration(flags.runtimeTimeout),
    runtimeDeadlineMs: parseDuration(flags.runtimeDeadline),
    fullResyncEvery,
    rollout: { policyName: flags.rolloutPolicy, autoRollback: flags.autoRollback },
    shard,
    perRuntimeMetrics: flags.perRuntimeMetrics === true,
  };
}

/** `--auto-create [selector]`: '' (every Runtime) when given bare; off when absent. */
function autoCreateSelectorOf(flag: string | boolean | undefined): string | undefined {
  if (flag === undefined) return undefined;
  return flag === true ? '' : String(flag);
}

/** `--drift-listen host:port` with the names runtimes reach it by (`--drift-url`, `--drift-dns-names`). */
function driftListenerOf(flags: ControllerFlags): DirectModeStarterSettings['driftListener'] {
  const minVersion = tlsMinVersionOf(flags.tlsMinVersion);
  if (!flags.driftListen) return undefined;
  const at = flags.driftListen.lastIndexOf(':');
  const host = flags.driftListen.slice(0, at) || '0.0.0.0';
  const port = positiveInt('drift-listen port', flags.driftListen.slice(at + 1));
  if (!flags.driftUrl)
    throw new FlagError('--drift-listen needs --drift-url (how runtimes reach the listener)');
  const urlHost = new URL(flags.driftUrl).hostname;
  const isIp = /^[\d.]+$|:/.test(urlHost);
  return {
    host,
    port,
    dnsNames: [...(flags.driftDnsNames?.split(',').filter(Boolean) ?? []), ...(isIp ? [] : [urlHost])],
    ipAddresses: isIp ? [urlHost] : [],
    minVersion,
  };
}
