import { readFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { controllerManifestList, renderControllerManifests } from '../../render/controller-manifests.js';
import { renderWebhookManifests, webhookManifestList } from '../../render/webhook-manifests.js';
import { packageVersion } from '../../version.js';
import { runtimeBootstrapperCrd } from '../../api/runtime-bootstrapper-crd.js';
import type { RenderControllerFlags, RenderWebhookFlags } from './render.js';

/** Default webhook image: the release of this CLI. */
export const defaultImage = (): string =>
  `europe-docker.pkg.dev/kyma-project/prod/rt-bootstrapper:${packageVersion()}`;

/** Prints manifests as a multi-document YAML stream. */
export function toYamlStream(objects: readonly object[]): string {
  return objects.map((o) => `---\n${stringify(o)}`).join('');
}

/** `rtb render webhook`. */
export function renderWebhook(flags: RenderWebhookFlags): void {
  const manifests = renderWebhookManifests({
    image: flags.image ?? defaultImage(),
    namespace: flags.namespace,
    replicas: Number.parseInt(flags.replicas, 10),
    ...(flags.caBundle ? { caBundlePem: readFileSync(flags.caBundle, 'utf8') } : {}),
    ...(flags.url ? { url: flags.url } : {}),
    failurePolicy: flags.failurePolicy,
  });
  process.stdout.write(toYamlStream(webhookManifestList(manifests)));
}

/** `rtb render controller`. */
export function renderController(flags: RenderControllerFlags): void {
  const manifests = renderControllerManifests({
    image: flags.image ?? defaultImage(),
    namespace: flags.namespace,
    replicas: Number.parseInt(flags.replicas, 10),
    pullSecretName: flags.pullSecret,
    ...(flags.clusterTrustBundle ? { clusterTrustBundleName: flags.clusterTrustBundle } : {}),
    configMapName: flags.configMap,
    ...(flags.runtimeSelector ? { runtimeSelector: flags.runtimeSelector } : {}),
    signal: flags.signal,
    coalesce: flags.coalesce,
    mode: flags.mode,
  });
  const crds = flags.mode === 'direct' ? [runtimeBootstrapperCrd()] : [];
  process.stdout.write(toYamlStream([...crds, ...controllerManifestList(manifests)]));
}
