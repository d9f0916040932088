/** The RuntimeBootstrapper condition of a kept trust-bundle projection, as the direct-mode tests start from. */
import type { Condition } from '../../src/api/runtime-bootstrapper.js';

/** The `TrustBundleProjection` condition saying the projection is kept, true since `at`. */
export function keptTrustProjection(at: Date): Condition {
  return {
    type: 'TrustBundleProjection',
    status: 'True',
    reason: 'Kept',
    message: '',
    lastTransitionTime: at.toISOString(),
  };
}
