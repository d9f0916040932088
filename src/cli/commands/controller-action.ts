import { KubeConfig } from '@kubernetes/client-node';
import { defaultIdentity, startControllerApp } from '../../controller/controller-app.js';
import { startAnnotateMode } from '../../controller/annotate/annotate-mode.js';
import type { ModeStarter } from '../../controller/mode.js';
import { directModeStarter, type DirectModeSettings } from '../../controller/direct/direct-mode-starter.js';
import { DEFAULT_DIRECT_CONCURRENCY } from '../../controller/direct/direct-mode-options.js';
import { DEFAULT_ANNOTATE_CONCURRENCY } from './controller-flags.js';
import { KCP_SERVING_POLICY } from '../../serving-cert/serving-policy.js';
import { packageVersion, releaseImage } from '../../version.js';
import { createLogger } from '../../telemetry/logger.js';
import { FlagError, parseDuration, positiveInt } from '../flag-values.js';
import type { ControllerFlags } from './controller-flags.js';
import { runUntilSignal } from '../run-until-signal.js';
import { restartNamespacesOf } from './restart-namespaces.js';
import { CONTROLLER_HARD_STOP_MS } from '../../controller/controller-grace.js';

/** Runs `rtb controller` until SIGTERM or SIGINT. */
export async function runController(flags: ControllerFlags): Promise<void> {
  if (flags.sharding === true && flags.mode !== 'direct')
    throw new FlagError('--sharding works in direct mode only (annotate mode runs on one leader)');
  const identity = defaultIdentity();
  const timing = {
    leaseDurationMs: parseDuration(flags.leaseDuration),
    renewDeadlineMs: parseDuration(flags.renewDeadline),
    retryPeriodMs: parseDuration(flags.retryPeriod),
  };
  let starter: ModeStarter;
  switch (flags.mode) {
    case 'annotate':
      starter = startAnnotateMode;
      break;
    case 'direct':
      // Built from its own flags. Sharded, every replica runs it on its own Lease (no leader election).
      starter = directModeStarter({
        ...directSettings(flags),
        ...(flags.sharding === true ? { shard: { identity, timing } } : {}),
      });
      break;
  }
  const logger = createLogger({ name: 'controller', level: flags.logLevel });
  const kc = new KubeConfig();
  if (flags.kubeconfig) kc.loadFromFile(flags.kubeconfig);
  else kc.loadFromDefault();
  const concurrency = positiveInt(
    'concurrency',
    flags.concurrency ??
      String(flags.mode === 'direct' ? DEFAULT_DIRECT_CONCURRENCY : DEFAULT_ANNOTATE_CONCURRENCY),
  );
  if (concurrency < 1) throw new FlagError('--concurrency must be at least 1');
  const app = await startControllerApp({
    kubeConfig: kc,
    namespace: flags.namespace,
    pullSecretName: flags.pullSecret,
    ...(flags.clusterTrustBundle ? { clusterTrustBundleName: flags.clusterTrustBundle } : {}),
    configMapName: flags.configMap,
    configMapKey: flags.configKey,
    ...(flags.manifestsConfigMap ? { manifestsConfigMapName: flags.manifestsConfigMap } : {}),
    mode: flags.mode,
    starter,
    modeOptions: {
      ...(flags.runtimeSelector ? { runtimeSelector: flags.runtimeSelector } : {}),
      signal: flags.signal,
      coalesceMs: parseDuration(flags.coalesce),
      concurrency,
      resyncMs: parseDuration(flags.resync ?? (flags.mode === 'direct' ? '10m' : '5m')),
      stateConfigMapName: flags.stateConfigMap,
    },
    leaderElection:
      flags.leaderElect && flags.sharding !== true ? { leaseName: flags.leaderElectionId, timing } : false,
    identity,
    host: flags.metricsHost,
    port: positiveInt('metrics-port', flags.metricsPort),
    logger,
  });
  await runUntilSignal(app, logger, 'stopping', CONTROLLER_HARD_STOP_MS);
}

/** Direct mode's settings from the flags. */
export function directSettings(flags: ControllerFlags): DirectModeSettings {
  const version = flags.webhookVersion ?? packageVersion();
  const fullResyncEvery = positiveInt('full-resync-every', flags.fullResyncEvery);
  if (fullResyncEvery < 1) throw new FlagError('--full-resync-every must be at least 1');
  let driftListener: DirectModeSettings['driftListener'];
  if (flags.driftListen) {
    const at = flags.driftListen.lastIndexOf(':');
    const host = flags.driftListen.slice(0, at) || '0.0.0.0';
    const port = positiveInt('drift-listen port', flags.driftListen.slice(at + 1));
    if (!flags.driftUrl)
      throw new FlagError('--drift-listen needs --drift-url (how runtimes reach the listener)');
    const urlHost = new URL(flags.driftUrl).hostname;
    const isIp = /^[\d.]+$|:/.test(urlHost);
    driftListener = {
      host,
      port,
      dnsNames: [...(flags.driftDnsNames?.split(',').filter(Boolean) ?? []), ...(isIp ? [] : [urlHost])],
      ipAddresses: isIp ? [urlHost] : [],
    };
  }
  return {
    release: {
      image: flags.webhookImage ?? releaseImage(version),
      version,
      ...(flags.webhookPriorityClassName === undefined
        ? {}
        : { priorityClassName: flags.webhookPriorityClassName }),
      restartNamespaces: restartNamespacesOf(flags.webhookRestartNamespaces, '--webhook-restart-namespaces'),
    },
    ...(flags.autoCreate !== undefined
      ? { autoCreateSelector: flags.autoCreate === true ? '' : String(flags.autoCreate) }
      : {}),
    ...(flags.driftUrl
      ? {
          drift: {
            listenerUrl: flags.driftUrl,
            clientValidityMs: parseDuration(flags.certValidity),
            renewBeforeMs: parseDuration(flags.certRenewBefore),
          },
        }
      : {}),
    // The serving certificate renews at half its life (the protocol's KCP policy), not by --cert-renew-before.
    servingPolicy: { ...KCP_SERVING_POLICY, servingLifetimeMs: parseDuration(flags.certValidity) },
    ...(driftListener ? { driftListener } : {}),
    caRotation: { renewBeforeMs: parseDuration(flags.caRenewBefore), graceMs: parseDuration(flags.caGrace) },
    runtimeTimeoutMs: parseDuration(flags.runtimeTimeout),
    runtimeDeadlineMs: parseDuration(flags.runtimeDeadline),
    fullResyncEvery,
    rollout: { policyName: flags.rolloutPolicy, autoRollback: flags.autoRollback },
    perRuntimeMetrics: flags.perRuntimeMetrics === true,
  };
}
