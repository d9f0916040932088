/**
 * Pod types in their JSON form, derived from @kubernetes/client-node's models.
 *
 * Why not use V1Pod directly: client-node's models are classes (with static metadata) and carry
 * `Date` for timestamps, while the webhook receives plain JSON from the AdmissionReview, where a
 * timestamp is a string and nothing is a class instance. The derived types describe what we really
 * hold and keep the field names and optionality of the upstream models.
 */
import type {
  V1Container,
  V1EnvVar,
  V1EphemeralContainer,
  V1LocalObjectReference,
  V1Pod,
  V1Volume,
  V1VolumeMount,
} from '@kubernetes/client-node';

/** The JSON form of a client-node model: plain objects, `Date` as RFC 3339 string. */
export type JsonShape<T> = T extends Date
  ? string
  : T extends readonly (infer U)[]
    ? JsonShape<U>[]
    : T extends object
      ? { [K in keyof T]: JsonShape<T[K]> }
      : T;

/** A Pod as decoded from JSON. */
export type Pod = JsonShape<V1Pod>;
/** A container or init container. */
export type Container = JsonShape<V1Container>;
/** An ephemeral container. */
export type EphemeralContainer = JsonShape<V1EphemeralContainer>;
/** An env entry. */
export type EnvVar = JsonShape<V1EnvVar>;
/** A Pod volume. */
export type Volume = JsonShape<V1Volume>;
/** A container's volume mount. */
export type VolumeMount = JsonShape<V1VolumeMount>;
/** A reference by name, as in `imagePullSecrets`. */
export type LocalObjectReference = JsonShape<V1LocalObjectReference>;
