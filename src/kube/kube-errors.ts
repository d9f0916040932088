/**
 * The API server's `Status` shape and a typed error for failed API calls, with the
 * classification the reflector needs: "my resourceVersion is gone, relist" versus
 * "something else failed, back off and retry".
 */

/** A `metav1.Status` as returned in error bodies and watch `ERROR` events. */
export interface KubeStatus {
  readonly kind?: string;
  readonly apiVersion?: string;
  readonly status?: string;
  readonly message?: string;
  readonly reason?: string;
  readonly code?: number;
  readonly details?: {
    readonly name?: string;
    readonly kind?: string;
    readonly causes?: readonly {
      readonly reason?: string;
      readonly message?: string;
      readonly field?: string;
    }[];
    readonly retryAfterSeconds?: number;
  };
}

/** Details of a {@link KubeApiError}. */
export interface KubeApiErrorOptions {
  /** HTTP status (or the Status `code` of a watch ERROR event); absent for network errors. */
  readonly statusCode?: number;
  /** The Status `reason`, e.g. `NotFound`, `Expired`, `Gone`. */
  readonly reason?: string;
  readonly status?: KubeStatus;
  readonly cause?: unknown;
}

/** A failed call to the Kubernetes API. */
export class KubeApiError extends Error {
  override readonly name = 'KubeApiError';
  readonly statusCode: number | undefined;
  readonly reason: string | undefined;
  readonly status: KubeStatus | undefined;

  constructor(message: string, opts: KubeApiErrorOptions = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.statusCode = opts.statusCode;
    this.reason = opts.reason ?? opts.status?.reason;
    this.status = opts.status;
  }

  /** An error from a Status object (error body or watch ERROR event). */
  static fromStatus(status: KubeStatus, fallbackCode?: number, cause?: unknown): KubeApiError {
    const code = status.code ?? fallbackCode;
    const message = status.message ?? `Kubernetes API error${code === undefined ? '' : ` ${code}`}`;
    return new KubeApiError(message, { statusCode: code, status, cause });
  }

  /**
   * A failed call said in the caller's words (`cannot apply Secret a/b`), keeping the status of
   * the call's own KubeApiError, so status checks see it without looking at the cause.
   */
  static wrap(message: string, cause: unknown): KubeApiError {
    const call = cause instanceof KubeApiError ? cause : undefined;
    return new KubeApiError(message, {
      statusCode: call?.statusCode,
      reason: call?.reason,
      status: call?.status,
      cause,
    });
  }
}

/** Whether `value` looks like a `Status` object (as opposed to a watched resource). */
export function isKubeStatus(value: unknown): value is KubeStatus {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'Status';
}

function statusOf(err: unknown): {
  code: number | undefined;
  reason: string | undefined;
  status?: KubeStatus;
} {
  if (err instanceof KubeApiError) return { code: err.statusCode, reason: err.reason, status: err.status };
  if (isKubeStatus(err)) return { code: err.code, reason: err.reason, status: err };
  if (typeof err === 'object' && err !== null) {
    // Errors of other clients (e.g. client-node's ApiException has `code`).
    const e = err as { statusCode?: unknown; code?: unknown };
    const code =
      typeof e.statusCode === 'number' ? e.statusCode : typeof e.code === 'number' ? e.code : undefined;
    return { code, reason: undefined };
  }
  return { code: undefined, reason: undefined };
}

/** The HTTP status of an API error, if it has one. */
export function statusCodeOf(err: unknown): number | undefined {
  return statusOf(err).code;
}

/** 410 Gone / reason `Expired` or `Gone`: the resourceVersion or continue token is too old. */
export function isResourceExpired(err: unknown): boolean {
  const { code, reason } = statusOf(err);
  return code === 410 || reason === 'Expired' || reason === 'Gone';
}

/** "Too large resource version": the server has not caught up with our resourceVersion. */
export function isTooLargeResourceVersion(err: unknown): boolean {
  const { status } = statusOf(err);
  if (status?.details?.causes?.some((c) => c.reason === 'ResourceVersionTooLarge') === true) return true;
  return status?.message?.includes('Too large resource version') === true;
}

/** Whether a watch failed because its resourceVersion cannot be used any more, so only a relist helps. */
export function isResourceVersionUnusable(err: unknown): boolean {
  return isResourceExpired(err) || isTooLargeResourceVersion(err);
}

/**
 * The error of a call that got no HTTP answer at all (connection refused or reset, TLS failure,
 * timeout), found along the `cause` chain; undefined when the server answered or the call
 * never started (a kubeconfig without a cluster).
 */
export function noResponseError(err: unknown): KubeApiError | undefined {
  let e: unknown = err;
  for (let depth = 0; e instanceof Error && depth < 8; depth++) {
    // A wrapped call (KubeApiError.wrap) says the caller's words; the call's own error says why.
    if (e instanceof KubeApiError && !(e.cause instanceof KubeApiError))
      return e.statusCode === undefined && e.cause !== undefined ? e : undefined;
    e = e.cause;
  }
  return undefined;
}

/**
 * 404 for a resource the server does not serve (its group version is off or gone), as opposed to
 * a missing object of a served resource, whose Status names the object (`details.name`). An API
 * server upgrade that drops a version answers every call there this way.
 */
export function isResourceNotServed(err: unknown): boolean {
  const { code, status } = statusOf(err);
  return code === 404 && (status?.details?.name ?? '') === '';
}
