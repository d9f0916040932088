/**
 * What bounds every request to a cluster whose answers are not trusted (a runtime, whose admins
 * hold cluster-admin there), and the typed errors of a request that broke a bound. An access
 * ({@link ClusterAccess}) carries its limits; `kubeRequest` and `KubeListWatch` apply them to
 * every call through it. Without limits, only each call's own inactivity timeout applies.
 *
 * @see ./kube-request.ts and ./list-watch.ts
 */

/** The bounds of each request through one access. */
export interface RequestLimits {
  /** The most bytes read of one answer's body (and of one watch event); beyond, the call fails. */
  readonly maxAnswerBytes: number;
  /**
   * The whole call, from its start to the last byte of its answer, within this long; the
   * inactivity timeout of each call still applies, so a silent server fails sooner and a server
   * that drips a byte now and then fails here.
   */
  readonly deadlineMs: number;
  /** When aborted (the process stops), calls in flight end and new ones fail at once. */
  readonly signal?: AbortSignal;
  /**
   * Awaited with each answer (or failure) before its caller goes on: hundreds of calls in flight
   * answered in one turn of the event loop would otherwise run their callers' next steps back to
   * back (./loop-pacer.ts).
   */
  readonly pace?: () => Promise<void>;
}

/**
 * A call broke a bound of {@link RequestLimits}; names the bound and the path, never the content.
 * Not a `KubeApiError`: the server's answer was not taken, whatever its status.
 */
export abstract class RequestBoundError extends Error {
  /** The reason a condition carries. */
  abstract readonly boundReason: 'AnswerTooLarge' | 'DeadlineExceeded' | 'Stopping';
}

/** An answer (or one watch event) exceeded {@link RequestLimits.maxAnswerBytes}. */
export class AnswerTooLargeError extends RequestBoundError {
  override readonly name = 'AnswerTooLargeError';
  readonly boundReason = 'AnswerTooLarge' as const;

  constructor(
    readonly what: string,
    readonly limitBytes: number,
  ) {
    super(`${what}: the answer exceeds the cap of ${limitBytes} bytes on answers from this cluster`);
  }
}

/** A call did not complete within {@link RequestLimits.deadlineMs}. */
export class RequestDeadlineError extends RequestBoundError {
  override readonly name = 'RequestDeadlineError';
  readonly boundReason = 'DeadlineExceeded' as const;

  constructor(
    readonly what: string,
    readonly deadlineMs: number,
  ) {
    super(`${what}: no complete answer within ${deadlineMs} ms (the deadline of a call to this cluster)`);
  }
}

/** A call ended (or was refused) because the process is stopping. */
export class RequestAbortedError extends RequestBoundError {
  override readonly name = 'RequestAbortedError';
  readonly boundReason = 'Stopping' as const;

  constructor(readonly what: string) {
    super(`${what}: abandoned, the process is stopping`);
  }
}

/** The first {@link RequestBoundError} along `error`'s cause chain, if any. */
export function requestBoundIn(error: unknown): RequestBoundError | undefined {
  let e: unknown = error;
  for (let depth = 0; e instanceof Error && depth < 8; depth++) {
    if (e instanceof RequestBoundError) return e;
    e = e.cause;
  }
  return undefined;
}
