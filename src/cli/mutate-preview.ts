import { parse, stringify } from 'yaml';
import { ConfigError, readWebhookConfig, type WebhookConfig } from '../api/webhook-config.js';
import { configOnRuntime, mutatePod, type AdmissionOperation } from '../mutation/pipeline.js';
import { asJsonObject } from '../api/json-object.js';
import { canonicalRegistry, isValidRegistryHost } from '../image/image-reference.js';

/** Output format of `rtb mutate`. */
export type PreviewOutput = 'yaml' | 'json' | 'patch';

/** The input of `rtb mutate` could not be used; the message is the one-line reason. */
export class PreviewInputError extends Error {
  constructor(message: string, options?: ErrorOptions) {
    super(message, options);
    this.name = 'PreviewInputError';
  }
}

/** Texts and choices of one preview. */
export interface PreviewInput {
  readonly podText: string;
  readonly configText: string;
  readonly namespaceText?: string;
  readonly operation?: AdmissionOperation;
  readonly output?: PreviewOutput;
  /** As `rtb webhook --landscape`: the landscape for set-landscape; wins over the config's. */
  readonly landscape?: string | undefined;
  /**
   * Upstream hosts with a customer's registry cache on the runtime previewed, as the webhook finds
   * them there (RegistryCacheConfig, docs/registry-caches.md); none by default.
   */
  readonly registryCaches?: readonly string[] | undefined;
  /** Told each warning: doubtful config fields (`path: message`) and manipulations skipped. */
  readonly onWarning?: (message: string) => void;
}

function parseDocument(text: string, what: string): unknown {
  try {
    return parse(text) as unknown;
  } catch (cause) {
    const first = (cause instanceof Error ? cause.message : String(cause)).split('\n')[0] ?? '';
    throw new PreviewInputError(`${what} is not valid YAML or JSON: ${first}`, { cause });
  }
}

/**
 * What `rtb mutate` prints: the Pod after exactly the webhook's pipeline (or its JSON Patch),
 * with the config read as `rtb webhook` reads it (so a config the webhook would refuse is
 * refused here too). No cluster is needed; the pull Secret's source is assumed to exist.
 */
export function previewMutation(input: PreviewInput): string {
  const pod = asJsonObject(parseDocument(input.podText, 'the Pod'));
  if (pod?.kind !== 'Pod' || (pod.apiVersion !== undefined && pod.apiVersion !== 'v1')) {
    const kind = typeof pod?.kind === 'string' ? pod.kind : 'no kind';
    throw new PreviewInputError(`the input is not a Pod (apiVersion v1, kind Pod); found ${kind}`);
  }
  let config: WebhookConfig;
  try {
    const read = readWebhookConfig(input.configText, { runtime: { landscape: input.landscape } });
    config = read.config;
    for (const w of read.warnings) input.onWarning?.(`config ${w.path}: ${w.message}`);
  } catch (error) {
    if (error instanceof ConfigError) {
      const first = error.issues[0];
      throw new PreviewInputError(
        `invalid config: ${first ? `${first.path}: ${first.message}` : error.message}`,
        { cause: error },
      );
    }
    throw error;
  }
  let namespaceName = (asJsonObject(pod.metadata)?.namespace as string | undefined) ?? 'default';
  let namespaceAnnotations: Record<string, string> | undefined;
  if (input.namespaceText !== undefined) {
    const ns = asJsonObject(parseDocument(input.namespaceText, 'the Namespace'));
    if (ns?.kind !== 'Namespace')
      throw new PreviewInputError('--namespace is not a Namespace (kind Namespace)');
    const meta = asJsonObject(ns.metadata);
    if (typeof meta?.name === 'string') namespaceName = meta.name;
    namespaceAnnotations = asJsonObject(meta?.annotations) as Record<string, string> | undefined;
  }
  const cachedRegistries = new Set<string>();
  for (const host of input.registryCaches ?? []) {
    if (!isValidRegistryHost(host))
      throw new PreviewInputError(
        `--registry-cache ${JSON.stringify(host)} is not a registry host (host or host:port)`,
      );
    cachedRegistries.add(canonicalRegistry(host));
  }
  if (cachedRegistries.size > 0 && config.registryCaches !== 'leave')
    input.onWarning?.(
      '--registry-cache changes nothing: the config rewrites cached hosts (registryCaches is not "leave")',
    );
  const result = mutatePod({
    pod,
    operation: input.operation ?? 'CREATE',
    namespace: { name: namespaceName, annotations: namespaceAnnotations },
    config: configOnRuntime(config, cachedRegistries),
    pullSecretAvailable: true,
  });
  for (const warning of result.warnings) input.onWarning?.(warning);
  switch (input.output ?? 'yaml') {
    case 'patch':
      return `${JSON.stringify(result.patch, null, 2)}\n`;
    case 'json':
      return `${JSON.stringify(result.pod, null, 2)}\n`;
    case 'yaml':
      return stringify(result.pod);
  }
}
