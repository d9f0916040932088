/**
 * The annotate mode's only write to Runtimes: a JSON merge patch of metadata (the signal and
 * its version stamp). A merge patch touches nothing else, needs no read first and is
 * idempotent, so a retry after an unclear failure is harmless.
 */
import { RUNTIME_GROUP, RUNTIME_PLURAL, RUNTIME_VERSION } from '../../api/runtime.js';
import { FIELD_MANAGER } from '../../api/runtime-names.js';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { KeepAliveAccess } from '../../kube/keep-alive-access.js';
import { statusCodeOf } from '../../kube/kube-errors.js';
import { kubeRequest } from '../../kube/kube-request.js';
import { DEFAULT_REQUEST_TIMEOUT_MS } from './request-options.js';

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

/**
 * Patches Runtimes' metadata: raw merge patches over kept-alive connections (one TLS context,
 * parsed once), the answer read but not parsed (nobody reads it; thousands of Runtime objects
 * would cost more CPU than the writes).
 */
export class RuntimeSignaller {
  private readonly access: KeepAliveAccess;

  constructor(
    kubeConfig: ClusterAccess,
    private readonly timeoutMs = DEFAULT_REQUEST_TIMEOUT_MS,
  ) {
    this.access = new KeepAliveAccess(kubeConfig);
  }

  /** Applies `patch` to Runtime `namespace/name`; rejects with a {@link SignalError}. */
  async patch(namespace: string, name: string, patch: object): Promise<void> {
    try {
      await kubeRequest(this.access, {
        method: 'PATCH',
        path: `/apis/${RUNTIME_GROUP}/${RUNTIME_VERSION}/namespaces/${encodeURIComponent(namespace)}/${RUNTIME_PLURAL}/${encodeURIComponent(name)}`,
        query: { fieldManager: FIELD_MANAGER },
        body: patch,
        contentType: 'application/merge-patch+json',
        timeoutMs: this.timeoutMs,
        parseResponse: false,
      });
    } catch (cause) {
      const code = statusCodeOf(cause);
      throw new SignalError(`cannot signal Runtime ${namespace}/${name}`, `${namespace}/${name}`, code, {
        cause,
      });
    }
  }

  /** Lets the connections go. */
  close(): void {
    this.access.close();
  }
}
