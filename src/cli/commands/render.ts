import type { Command } from 'commander';
import { readFileSync } from 'node:fs';
import { stringify } from 'yaml';
import { controllerManifestList, renderControllerManifests } from '../../render/controller-manifests.js';
import { renderWebhookManifests, webhookManifestList } from '../../render/webhook-manifests.js';
import { packageVersion } from '../../version.js';

interface RenderWebhookFlags {
  image?: string;
  namespace: string;
  replicas: string;
  caBundle?: string;
  url?: string;
  failurePolicy: 'Ignore' | 'Fail';
}

interface RenderControllerFlags {
  image?: string;
  namespace: string;
  replicas: string;
  pullSecret: string;
  clusterTrustBundle?: string;
  configMap: string;
  runtimeSelector?: string;
  signal: 'annotation' | 'label';
  coalesce: string;
}

/** Default webhook image: the release of this CLI. */
export const defaultImage = (): string =>
  `europe-docker.pkg.dev/kyma-project/prod/rt-bootstrapper:${packageVersion()}`;

/** Prints manifests as a multi-document YAML stream. */
export function toYamlStream(objects: readonly object[]): string {
  return objects.map((o) => `---\n${stringify(o)}`).join('');
}

/** `rtb render …`: prints the manifests a runtime (webhook) or the KCP (controller) needs. */
export function registerRenderCommand(program: Command): void {
  const render = program.command('render').description('print manifests');
  render
    .command('webhook')
    .description(
      "print the runtime's webhook manifests (ServiceAccount, RBAC, Deployment, PDB, Service, MutatingWebhookConfiguration)",
    )
    .option('--image <image>', 'webhook image (default: this release)')
    .option('--namespace <namespace>', 'namespace', 'kyma-system')
    .option('--replicas <n>', 'replicas', '2')
    .option('--ca-bundle <file>', "PEM of the CA that signed the webhook's serving certificate")
    .option('--url <url>', 'call this URL instead of the in-cluster Service')
    .option('--failure-policy <policy>', 'Ignore or Fail', 'Ignore')
    .action((flags: RenderWebhookFlags) => {
      const manifests = renderWebhookManifests({
        image: flags.image ?? defaultImage(),
        namespace: flags.namespace,
        replicas: Number.parseInt(flags.replicas, 10),
        ...(flags.caBundle ? { caBundlePem: readFileSync(flags.caBundle, 'utf8') } : {}),
        ...(flags.url ? { url: flags.url } : {}),
        failurePolicy: flags.failurePolicy,
      });
      process.stdout.write(toYamlStream(webhookManifestList(manifests)));
    });
  render
    .command('controller')
    .description(
      "print the KCP controller's manifests (ServiceAccount, least-privilege RBAC incl. the Lease, Deployment)",
    )
    .option('--image <image>', 'controller image (default: this release)')
    .option('--namespace <namespace>', 'namespace', 'kcp-system')
    .option('--replicas <n>', 'replicas (one leads, the others stand by)', '2')
    .requiredOption('--pull-secret <name>', 'the registry pull Secret in the namespace')
    .option('--cluster-trust-bundle <name>', 'the ClusterTrustBundle to watch')
    .option('--config-map <name>', 'the webhook ConfigMap', 'rt-bootstrapper-config')
    .option('--runtime-selector <selector>', 'label selector narrowing the Runtimes')
    .option('--signal <kind>', 'annotation or label', 'annotation')
    .option('--coalesce <duration>', 'quiet period coalescing a burst of changes', '2s')
    .action((flags: RenderControllerFlags) => {
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
      });
      process.stdout.write(toYamlStream(controllerManifestList(manifests)));
    });
}
