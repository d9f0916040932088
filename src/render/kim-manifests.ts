/**
 * What KIM's installer reads (DESIGN.md §8): ConfigMap `kcp-system/runtime-bootstrapper-manifests`,
 * key `manifests.yaml` (pure).
 *
 * Verified in kyma-project/kyma-infrastructure-manager, internal/rtbootstrapper/manifestapplier.go:
 * - `ApplyManifests` cuts the text with `strings.Split(manifests, "---")`: on every `---`, not only
 *   on separator lines, so no document may contain three dashes anywhere (a PEM's `-----BEGIN`
 *   would cut a document in two). Each piece is trimmed, empty pieces and pieces without `kind`
 *   are skipped, the first object of a piece is decoded.
 * - `applyObject` maps the kind through discovery; a namespaced object without a namespace goes
 *   into `default`, a cluster-scoped one loses its namespace; a missing object is created, an
 *   existing one is server-side applied with `Force` under field manager `kim-bootstrapper`.
 *   Nothing is ever deleted or pruned.
 * - `InstallationInfo` reads Deployment `kyma-system/rt-bootstrapper-controller-manager` (flag
 *   `--runtime-bootstrapper-skr-deployment-name`): not found → install; `readyReplicas >= replicas`
 *   and `Available=True` → Ready unless label `app.kubernetes.io/version` of the FIRST `kind:
 *   Deployment` in the text (`getDeploymentToBeApplied`) differs → install again; else
 *   `Progressing=True` → wait; anything else fails the Runtime. A text without a Deployment would
 *   make that comparison dereference nothing.
 * So: no Secret, no `caBundle` (the webhook writes its own, docs/serving-certificate.md), no drift
 * channel (its client certificate is issued per runtime by direct mode only).
 */
import type { V1ConfigMap } from '@kubernetes/client-node';
import { stringify } from 'yaml';
import {
  APP_NAME,
  APP_NAME_LABEL,
  KIM_MANIFESTS_CONFIG_MAP,
  KIM_MANIFESTS_KEY,
  KIM_MANIFESTS_NAMESPACE,
  VERSION_LABEL,
  WEBHOOK_DEPLOYMENT,
} from '../api/runtime-names.js';
import { renderWebhookManifests, webhookManifestList } from './webhook-manifests.js';

/** Settings of `rtb render kim`. */
export interface KimManifestOptions {
  readonly image: string;
  /** The release: the Deployment's `app.kubernetes.io/version`, which KIM compares. */
  readonly version: string;
  /** `rtb webhook --landscape`. */
  readonly landscape?: string;
  /** Namespace of the ConfigMap on the KCP (KIM reads `kcp-system`). */
  readonly configMapNamespace?: string;
  readonly replicas?: number;
  readonly logLevel?: string;
  /** The webhook Pods' PriorityClass (it must exist on the runtime). */
  readonly priorityClassName?: string;
  /** Restart rights per namespace (each must exist on the runtime: KIM's create fails otherwise). */
  readonly restartNamespaces?: readonly string[];
}

/** What KIM reads, and the text inside it. */
export interface KimManifests {
  readonly configMap: V1ConfigMap;
  /** The value of `manifests.yaml`. */
  readonly text: string;
}

/** A rule of KIM's installer that the manifests break. */
export class KimManifestsError extends Error {
  override readonly name = 'KimManifestsError';
}

/** Kinds in our manifests that are cluster-scoped (everything else must name its namespace). */
const CLUSTER_SCOPED = new Set([
  'Namespace',
  'ClusterRole',
  'ClusterRoleBinding',
  'MutatingWebhookConfiguration',
  'ValidatingWebhookConfiguration',
  'ValidatingAdmissionPolicy',
  'ValidatingAdmissionPolicyBinding',
  'PriorityClass',
]);

interface Doc {
  readonly kind?: unknown;
  readonly metadata?: { readonly name?: unknown; readonly namespace?: unknown; readonly labels?: unknown };
}

/** Cuts `text` into documents exactly as KIM does: on every `---`, trimmed, empty pieces dropped. */
export function splitAsKim(text: string): string[] {
  return text
    .split('---')
    .map((d) => d.trim())
    .filter((d) => d !== '');
}

/**
 * Checks `objects` against KIM's rules (pure): each has `kind` and a name, no serialized document
 * contains `---` or a PEM block, each namespaced one names its namespace, and the first Deployment
 * is ours and carries `version`. Throws {@link KimManifestsError} naming the object and the rule.
 */
export function checkKimManifests(
  objects: readonly object[],
  docs: readonly string[],
  version: string,
): void {
  let firstDeployment: Doc | undefined;
  objects.forEach((o, i) => {
    const doc = o as Doc;
    const text = docs[i] ?? '';
    const kind = typeof doc.kind === 'string' ? doc.kind : '';
    const name = typeof doc.metadata?.name === 'string' ? doc.metadata.name : '';
    const what = `document ${i + 1} (${kind || 'no kind'} ${name || 'no name'})`;
    if (kind === '') throw new KimManifestsError(`${what}: no kind; KIM skips it`);
    if (name === '') throw new KimManifestsError(`${what}: no metadata.name; KIM refuses it`);
    if (text.includes('---'))
      throw new KimManifestsError(`${what}: contains "---", where KIM cuts documents`);
    if (hasPemHeader(text)) throw new KimManifestsError(`${what}: contains a PEM block`);
    const namespace = doc.metadata?.namespace;
    if (!CLUSTER_SCOPED.has(kind) && (typeof namespace !== 'string' || namespace === ''))
      throw new KimManifestsError(`${what}: metadata.namespace missing; KIM would put it into "default"`);
    if (kind === 'Deployment' && firstDeployment === undefined) firstDeployment = doc;
  });
  if (firstDeployment === undefined)
    throw new KimManifestsError('no Deployment; KIM has nothing to wait for');
  if (firstDeployment.metadata?.name !== WEBHOOK_DEPLOYMENT)
    throw new KimManifestsError(`the first Deployment is not ${WEBHOOK_DEPLOYMENT}, the one KIM compares`);
  const labels = (firstDeployment.metadata.labels ?? {}) as Record<string, unknown>;
  if (labels[VERSION_LABEL] !== version)
    throw new KimManifestsError(`the first Deployment's label ${VERSION_LABEL} is not "${version}"`);
}

/** The ConfigMap as YAML, the text in a literal block (as a person reads it, and as it round-trips). */
export function kimConfigMapYaml(k: KimManifests): string {
  return stringify(k.configMap, { blockQuote: 'literal', lineWidth: 0 });
}

/**
 * Scalars that KIM's YAML reader (sigs.k8s.io/yaml, YAML 1.1) takes for a boolean or null where our
 * writer (YAML 1.2) leaves them unquoted: the label would not arrive as that string.
 */
const YAML11_NON_STRINGS = /^(y|yes|n|no|true|false|on|off|null)$/i;

/**
 * Whether `text` holds `BEGIN <LABEL>` of a certificate or private key (`<LABEL>` capitals and
 * spaces), read run by run: a regex would rescan from every `BEGIN` of a long run.
 */
function hasPemHeader(text: string): boolean {
  for (const [run] of text.matchAll(/[A-Z ]+/g)) {
    const begin = run.indexOf('BEGIN ');
    if (begin === -1) continue;
    const label = begin + 'BEGIN '.length;
    if (run.includes('CERTIFICATE', label) || run.includes('PRIVATE KEY', label)) return true;
  }
  return false;
}

/** A label value (k8s.io/apimachinery validation.IsValidLabelValue): 63 characters at most. */
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;

/**
 * Refuses a release that KIM cannot carry as the Deployment's `app.kubernetes.io/version` label,
 * naming why: KIM compares that label to decide whether to install again.
 */
export function checkReleaseVersion(version: string): void {
  const refuse = (why: string): never => {
    throw new KimManifestsError(`version "${version}" cannot be KIM's ${VERSION_LABEL} label: ${why}`);
  };
  if (version === '') refuse('it is empty, and KIM would never see a new release');
  if (version.length > 63) refuse('a label value holds at most 63 characters');
  if (!LABEL_VALUE.test(version))
    refuse(
      'a label value holds only letters, digits, "-", "_" and "." and begins and ends with a letter or digit' +
        (version.includes('+') ? ' (drop the "+…" build metadata)' : ''),
    );
  if (YAML11_NON_STRINGS.test(version))
    refuse("KIM's YAML reader takes it for a boolean or null, not a string");
}

/** Renders KIM's manifests ConfigMap for one release (pure); checked with {@link checkKimManifests}. */
export function renderKimManifests(o: KimManifestOptions): KimManifests {
  checkReleaseVersion(o.version);
  const objects = webhookManifestList(
    renderWebhookManifests({
      image: o.image,
      version: o.version,
      landscape: o.landscape,
      replicas: o.replicas,
      logLevel: o.logLevel,
      priorityClassName: o.priorityClassName,
      restartNamespaces: o.restartNamespaces,
      // KIM applies one manifest set to every minor: the version-dependent policy comes from the
      // agent, by discovery on each runtime (docs/admission-policy.md).
      admissionPolicyInstall: true,
    }),
  );
  const docs = objects.map((obj) => stringify(obj, { lineWidth: 0 }).trim());
  checkKimManifests(objects, docs, o.version);
  const text = docs.map((d) => `---\n${d}\n`).join('');
  if (splitAsKim(text).length !== docs.length)
    throw new KimManifestsError('the text does not cut into its documents where KIM cuts it');
  return {
    text,
    configMap: {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {
        name: KIM_MANIFESTS_CONFIG_MAP,
        namespace: o.configMapNamespace ?? KIM_MANIFESTS_NAMESPACE,
        labels: { [APP_NAME_LABEL]: APP_NAME, [VERSION_LABEL]: o.version },
      },
      data: { [KIM_MANIFESTS_KEY]: text },
    },
  };
}
