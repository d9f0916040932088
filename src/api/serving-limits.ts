/**
 * The webhook server's limits and timings, in one place: the server, the CLI's defaults and the
 * rendered Deployment read them from here, so they cannot drift apart. The reasoning and the
 * measurements behind each figure are in docs/webhook-hardening.md.
 */

const MiB = 1024 * 1024;

/** The API server's timeout for one call of the webhook (`timeoutSeconds` of the registration). */
export const ADMISSION_TIMEOUT_SECONDS = 5;

/**
 * Largest request body. What the API server sends is an AdmissionReview of a Pod, once for CREATE
 * and twice (object and oldObject) for UPDATE. A Pod is at most what etcd stores (1.5 MiB in
 * protobuf); its JSON is larger, most of all for containers with probes, which defaulting
 * inflates (the largest storable Pods, found against the real API server, are in
 * docs/webhook-hardening.md). 8 MiB takes every CREATE and the UPDATE of any Pod up to about 4 MB.
 */
export const BODY_LIMIT_BYTES = 8 * MiB;

/**
 * Request bytes read and held at once, counted as they arrive (a declared length costs nothing).
 * A chunk that does not fit pauses its request: its socket is not read, so TCP holds the rest.
 */
export const READ_BUDGET_BYTES = 16 * MiB;

/** Requests with their whole body read at once: being decoded, decided or answered. */
export const MAX_REQUESTS_IN_FLIGHT = 64;

/**
 * What the decoded requests in flight may take together, by the estimate of ../webhook/decode-cost.ts
 * (an upper bound of what `JSON.parse` allocates for the body). A body whose estimate alone
 * exceeds it is refused (413): its shape is not a Pod's.
 */
export const DECODE_BUDGET_BYTES = 32 * MiB;

/**
 * The webhook's calls to its API server give up after this long without an answer. Two of them
 * run on the admission path (the namespace read of a namespace not cached yet, the pull Secret's
 * copy into a new namespace), and the webhook must still answer inside the API server's timeout:
 * concurrent requests share one such call, so a call left hanging would fail open every Pod of its
 * namespace until it ended. The copier's later replace and delete of a small Secret are bounded
 * the same: 2 s without a byte is ample for them.
 */
export const WEBHOOK_API_CALL_TIMEOUT_MS = 2_000;

/** Requests waiting for room at once; more are answered 503 at once. */
export const MAX_WAITING_REQUESTS = 1024;

/**
 * How long after its headers a request may wait for room before it is answered 503: well inside
 * the API server's timeout, so a request that gets room late is still answered in time, and one
 * that does not is failed by us (quickly, with a reason) rather than by the API server's timeout.
 * The 503 carries no `Retry-After`: client-go would sleep that long and send the call again
 * until the API server's own timeout, so the call would end at the timeout instead of at our answer.
 */
export const QUEUE_TIMEOUT_MS = (ADMISSION_TIMEOUT_SECONDS - 2) * 1000;

/**
 * A body not complete this long after its headers is refused (408, connection closed), and what
 * it sent is given back. The API server writes a review at once; a client that declares a length
 * and trickles it, or sends nothing, holds a connection only this long. Inside
 * {@link QUEUE_TIMEOUT_MS}, so a request cut here is still answered before the API server gives up.
 */
export const BODY_TIMEOUT_MS = 2_000;

/**
 * How often Node checks the header and request timeouts of open connections (its default is
 * 30 s, so a timeout of 10 s ran for up to 40 s).
 */
export const CONNECTIONS_CHECK_MS = 1_000;

/** A TLS handshake not finished by then is dropped (Node's default is 120 s). */
export const HANDSHAKE_TIMEOUT_MS = 10_000;

/** Headers not complete by then: 408 and the connection closed. */
export const HEADERS_TIMEOUT_MS = 10_000;

/** The whole request (headers and body) not received by then: 408 and the connection closed. */
export const REQUEST_TIMEOUT_MS = 15_000;

/** An answer the client has not taken by then (it does not read) is dropped with its connection. */
export const WRITE_TIMEOUT_MS = 10_000;

/**
 * Idle keep-alive connections are closed after this. Longer than the idle timeout of the API
 * server's client (Go's 90 s), so the client closes first and never writes into a connection we
 * are closing.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 120_000;

/**
 * On SIGTERM the webhook keeps serving this long (answering with `Connection: close`, readiness
 * failing) so that the Pod leaves the Service's endpoints before it stops accepting connections.
 */
export const SHUTDOWN_DELAY_SECONDS = 5;

/**
 * The Deployment's `minReadySeconds`: a new Pod counts as available, and an old one is stopped for
 * it, only after it has been Ready this long, so that its address is among the Service's endpoints
 * as the API server resolves them before the Pod it replaces leaves them. The same propagation
 * that {@link SHUTDOWN_DELAY_SECONDS} waits for on the way out, on the way in.
 */
export const MIN_READY_SECONDS = SHUTDOWN_DELAY_SECONDS;

/** After the delay, requests in flight get this long to be answered; then every connection is closed. */
export const DRAIN_TIMEOUT_SECONDS = 10;

/** Queued drift events get this long to be delivered on shutdown. */
export const DRIFT_FLUSH_SECONDS = 5;

/**
 * The Pod's `terminationGracePeriodSeconds`: the delay, the drain, the drift flush and a margin
 * for stopping caches, so the webhook always exits on its own before the kubelet kills it.
 */
export const TERMINATION_GRACE_SECONDS =
  SHUTDOWN_DELAY_SECONDS + DRAIN_TIMEOUT_SECONDS + DRIFT_FLUSH_SECONDS + 10;
