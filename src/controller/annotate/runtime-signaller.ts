/**
 * The annotate mode's only write to Runtimes: a JSON merge patch of metadata (the signal and
 * its version stamp). A merge patch touches nothing else, needs no read first and is
 * idempotent, so a retry after an unclear failure is harmless.
 */
import { CustomObjectsApi, PatchStrategy, type KubeConfig } from '@kubernetes/client-node';
import { RUNTIME_GROUP, RUNTIME_PLURAL, RUNTIME_VERSION } from '../../api/runtime.js';
import { FIELD_MANAGER } from '../../kube/apply.js';
import { statusCodeOf } from '../../kube/kube-errors.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, requestOptions } from './request-options.js';

/** A signal write failed; names the Runtime. */
export class SignalError extends Error {
  override readonly name = 'SignalError';
  constructor(
    message: string,
    readonly runtime: string,
    readonly statusCode: number | undefined,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/** Patches Runtimes' metadata. */
export class RuntimeSignaller {
  private readonly api: CustomObjectsApi;

  constructor(
    kubeConfig: KubeConfig,
    private readonly timeoutMs = DEFAULT_REQUEST_TIMEOUT_MS,
  ) {
    this.api = kubeConfig.makeApiClient(CustomObjectsApi);
  }

  /** Applies `patch` to Runtime `namespace/name`; rejects with a {@link SignalError}. */
  async patch(namespace: string, name: string, patch: object): Promise<void> {
    try {
      await this.api.patchNamespacedCustomObject(
        {
          group: RUNTIME_GROUP,
          version: RUNTIME_VERSION,
          plural: RUNTIME_PLURAL,
          namespace,
          name,
          body: patch,
          fieldManager: FIELD_MANAGER,
        },
        requestOptions(this.timeoutMs, PatchStrategy.MergePatch),
      );
    } catch (cause) {
      const code = statusCodeOf(cause);
      throw new SignalError(`cannot signal Runtime ${namespace}/${name}`, `${namespace}/${name}`, code, {
        cause,
      });
    }
  }
}
