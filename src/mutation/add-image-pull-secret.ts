/**
 * Feature `rt-cfg.kyma-project.io/add-img-pull-secret`: reference the registry pull Secret in
 * `.spec.imagePullSecrets`.
 */
import type { ManipulationResult, PodPatchBuilder } from './manipulation.js';
import type { LocalObjectReference } from './pod.js';

/** Options of addImagePullSecret. */
export interface AddImagePullSecretOptions {
  /** Name of the Secret in the Pod's namespace (config `imagePullSecret.name`). */
  readonly secretName: string;
  /**
   * Whether the Secret is there to be referenced (the I/O shell copies it into the namespace).
   * A reference to a missing Secret makes the kubelet log a failed lookup for every pull and
   * pull anonymously, so without the Secret no reference is added.
   */
  readonly secretAvailable: boolean;
}

/** Result of addImagePullSecret; `skipped` says why nothing was added when it was wanted. */
export interface AddImagePullSecretResult extends ManipulationResult {
  readonly skipped?: 'secret-unavailable' | undefined;
}

/**
 * Appends `{name: secretName}` to `.spec.imagePullSecrets` unless a reference of that name is
 * already there; other references are kept in their order.
 */
export function addImagePullSecret(
  builder: PodPatchBuilder,
  options: AddImagePullSecretOptions,
): AddImagePullSecretResult {
  const existing: unknown = builder.current.spec?.imagePullSecrets;
  const references = Array.isArray(existing) ? (existing as LocalObjectReference[]) : [];
  if (references.some((ref) => ref.name === options.secretName)) return { changed: false, warnings: [] };
  if (!options.secretAvailable) {
    return {
      changed: false,
      warnings: [
        `pull Secret ${JSON.stringify(options.secretName)} is not available; no imagePullSecrets reference added`,
      ],
      skipped: 'secret-unavailable',
    };
  }
  const reference: LocalObjectReference = { name: options.secretName };
  builder.append(['spec', 'imagePullSecrets'], reference);
  return { changed: true, warnings: [] };
}
