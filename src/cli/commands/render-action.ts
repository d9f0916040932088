import { readFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { controllerManifestList, renderControllerManifests } from '../../render/controller-manifests.js';
import { kimConfigMapYaml, renderKimManifests } from '../../render/kim-manifests.js';
import { renderWebhookManifests, webhookManifestList } from '../../render/webhook-manifests.js';
import { packageVersion, releaseImage } from '../../version.js';
import { restartNamespacesOf } from './restart-namespaces.js';
import { rolloutDecisionCrd, rolloutPolicyCrd } from '../../api/rollout-policy-crd.js';
import { renderRolloutDecisionObjects } from '../../render/rollout-decisions.js';
import { runtimeBootstrapperCrd } from '../../api/runtime-bootstrapper-crd.js';
import { monitoringManifestList, renderMonitoring } from '../../monitoring/monitoring-manifests.js';
import { trimEndChar } from '../../text/trim-char.js';
import { ConfigError, readWebhookConfig, type ReadWebhookConfig } from '../../api/webhook-config.js';
import {
  admissionPolicyManifestList,
  renderAdmissionPolicy,
  type AdmissionPolicyApiVersion,
} from '../../render/admission-policy.js';

// The flags of each sub-command are here with the code that reads them: ./render.ts imports
// the types only, so registering the commands loads nothing of this file.

/** The flags of `rtb render webhook`. */
export interface RenderWebhookFlags {
  image?: string;
  namespace: string;
  replicas: string;
  caBundle?: string;
  url?: string;
  failurePolicy: 'Ignore' | 'Fail';
  version?: string;
  landscape?: string;
  priorityClassName?: string;
  /** Comma-separated: restart rights per namespace. */
  restartNamespaces?: string;
  serviceMonitor?: boolean;
}

/** The flags of `rtb render kim`. */
export interface RenderKimFlags {
  image?: string;
  version?: string;
  landscape?: string;
  namespace: string;
  replicas: string;
  raw?: boolean;
  priorityClassName?: string;
  /** Comma-separated: restart rights per namespace. */
  restartNamespaces?: string;
}

/** The flags of `rtb render controller`. */
export interface RenderControllerFlags {
  image?: string;
  namespace: string;
  replicas: string;
  pullSecret: string;
  clusterTrustBundle?: string;
  configMap: string;
  manifestsConfigMap?: string;
  runtimeSelector?: string;
  signal: 'annotation' | 'label';
  coalesce: string;
  mode: 'annotate' | 'direct';
  sharding?: boolean;
  perRuntimeMetrics?: boolean;
}

/** The flags of `rtb render admission-policy`. */
export interface RenderAdmissionPolicyFlags {
  config: string;
  landscape?: string;
  trustBundleName?: string;
  trustBundleHash?: string;
  revision?: string;
  apiVersion: AdmissionPolicyApiVersion;
  namespace: string;
  output: 'yaml' | 'json';
}

/** The flags of `rtb render monitoring`. */
export interface RenderMonitoringFlags {
  part: 'kcp' | 'runtime' | 'all';
  kcpNamespace: string;
  runtimeNamespace: string;
  controllerJob: string;
  webhookJob: string;
  runbookBaseUrl: string;
  dashboardBaseUrl: string;
  serviceMonitor?: boolean;
}

/** A positive whole number of replicas, or an error naming the flag. */
function replicasOf(text: string): number {
  const n = Number(text);
  if (!Number.isInteger(n) || n < 1)
    throw new Error(`--replicas: expected a whole number >= 1, got "${text}"`);
  return n;
}

/**
 * The flag's value, or undefined when it is absent or empty: the renderers test these options
 * with `!== undefined`, and `--url ""` has always meant no URL.
 */
function unlessEmpty(flag: string | undefined): string | undefined {
  return flag === '' ? undefined : flag;
}

/**
 * Prints manifests as a multi-document YAML stream. Multi-line strings (a dashboard's JSON) as
 * literal blocks, and no line folded: a folded block with more-indented lines is read differently
 * by kustomize's YAML library than by ours.
 */
export function toYamlStream(objects: readonly object[]): string {
  return objects.map((o) => `---\n${stringify(o, { blockQuote: 'literal', lineWidth: 0 })}`).join('');
}

/** `rtb render webhook`. */
export function renderWebhook(flags: RenderWebhookFlags): void {
  const manifests = renderWebhookManifests({
    image: flags.image ?? releaseImage(flags.version),
    version: flags.version ?? packageVersion(),
    namespace: flags.namespace,
    replicas: replicasOf(flags.replicas),
    caBundlePem: flags.caBundle ? readFileSync(flags.caBundle, 'utf8') : undefined,
    url: unlessEmpty(flags.url),
    landscape: unlessEmpty(flags.landscape),
    failurePolicy: flags.failurePolicy,
    priorityClassName: flags.priorityClassName,
    restartNamespaces: restartNamespacesOf(flags.restartNamespaces),
    serviceMonitor: flags.serviceMonitor === true,
  });
  process.stdout.write(toYamlStream(webhookManifestList(manifests)));
}

/** `rtb render admission-policy`: the config read as `rtb mutate --config` reads it. */
export function renderAdmissionPolicyCommand(flags: RenderAdmissionPolicyFlags): void {
  let read: ReadWebhookConfig;
  try {
    read = readWebhookConfig(readFileSync(flags.config, 'utf8'), {
      runtime: { landscape: unlessEmpty(flags.landscape) },
    });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    const first = error.issues[0];
    throw new Error(`invalid config: ${first ? `${first.path}: ${first.message}` : error.message}`, {
      cause: error,
    });
  }
  for (const w of read.warnings)
    process.stderr.write(`rtb render admission-policy: warning: config ${w.path}: ${w.message}\n`);
  const manifests = admissionPolicyManifestList(
    renderAdmissionPolicy(read.config, {
      apiVersion: flags.apiVersion,
      namespace: flags.namespace,
      revision: unlessEmpty(flags.revision),
      trustBundleName: unlessEmpty(flags.trustBundleName),
      trustBundleHash: unlessEmpty(flags.trustBundleHash),
    }),
  );
  process.stdout.write(
    flags.output === 'json'
      ? `${JSON.stringify({ apiVersion: 'v1', kind: 'List', items: manifests }, null, 2)}\n`
      : toYamlStream(manifests),
  );
}

/** `rtb render kim`. */
export function renderKim(flags: RenderKimFlags): void {
  const version = flags.version ?? packageVersion();
  const kim = renderKimManifests({
    image: flags.image ?? releaseImage(version),
    version,
    configMapNamespace: flags.namespace,
    replicas: replicasOf(flags.replicas),
    landscape: unlessEmpty(flags.landscape),
    priorityClassName: flags.priorityClassName,
    restartNamespaces: restartNamespacesOf(flags.restartNamespaces),
  });
  process.stdout.write(flags.raw ? kim.text : kimConfigMapYaml(kim));
}

/** `rtb render controller`. */
export function renderController(flags: RenderControllerFlags): void {
  const manifests = renderControllerManifests({
    image: flags.image ?? releaseImage(),
    namespace: flags.namespace,
    replicas: Number.parseInt(flags.replicas, 10),
    pullSecretName: flags.pullSecret,
    clusterTrustBundleName: unlessEmpty(flags.clusterTrustBundle),
    configMapName: flags.configMap,
    manifestsConfigMapName: unlessEmpty(flags.manifestsConfigMap),
    runtimeSelector: unlessEmpty(flags.runtimeSelector),
    signal: flags.signal,
    coalesce: flags.coalesce,
    mode: flags.mode,
    sharding: flags.sharding === true,
    perRuntimeMetrics: flags.perRuntimeMetrics === true,
  });
  const direct = flags.mode === 'direct';
  const crds = direct ? [runtimeBootstrapperCrd(), rolloutPolicyCrd(), rolloutDecisionCrd()] : [];
  // Who may decide on a rollout, and the check that records who did.
  const decisions = direct ? renderRolloutDecisionObjects() : [];
  process.stdout.write(toYamlStream([...crds, ...controllerManifestList(manifests), ...decisions]));
}

/** `rtb render monitoring`. */
export function renderMonitoringCommand(flags: RenderMonitoringFlags): void {
  const manifests = renderMonitoring({
    kcpNamespace: flags.kcpNamespace,
    runtimeNamespace: flags.runtimeNamespace,
    controllerJob: flags.controllerJob,
    webhookJob: flags.webhookJob,
    runbookBaseUrl: trimEndChar(flags.runbookBaseUrl, '/'),
    dashboardBaseUrl: trimEndChar(flags.dashboardBaseUrl, '/'),
    serviceMonitor: flags.serviceMonitor === true,
  });
  process.stdout.write(toYamlStream(monitoringManifestList(manifests, flags.part)));
}
