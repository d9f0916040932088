import type { Agent } from 'node:https';
import { setTimeout as delay } from 'node:timers/promises';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import { ATTESTATION_PATH, type Attestation, type ManagedRef } from '../api/attestation.js';
import { Backoff } from '../kube/backoff.js';
import type { ClusterAccess } from '../kube/cluster-access.js';
import { errorLine } from '../telemetry/error-line.js';
import { createAttestationMetrics, type AttestationMetrics } from './attestation-metrics.js';
import { answerWaitMs, judgeExchange, retryWaitMs, type AttestationExchange } from './attestation-outcome.js';
import { kubeVersionReader, readVersions, type VersionReader } from './managed-versions.js';
import { postJson, type PostHandle } from './post-json.js';
import { ReloadingTlsAgent, type ClientTlsFiles } from './reloading-tls-agent.js';
import { listenerEndpoint } from './listener-endpoint.js';

/** Settings of {@link RuntimeAttestor}. */
export interface RuntimeAttestorOptions {
  /** The KCP listener, `https://host:port` (the drift forwarder's); {@link ATTESTATION_PATH} is appended. */
  readonly url: string;
  /** Client certificate and key, and the listener's CA (the drift channel's); re-read when they change. */
  readonly tls: ClientTlsFiles;
  readonly logger: Logger;
  /** The runtime, read by the default {@link readVersion} (the webhook's in-cluster access). */
  readonly access?: ClusterAccess;
  /** Reads one managed object's resourceVersion (default: a GET of its path through {@link access}). */
  readonly readVersion?: VersionReader;
  /** Where the `rtb_attestation*` metrics go (default: a private registry). */
  readonly registry?: Registry;
  /** The first attestation waits a uniform random delay in [0, this) ms (default 30 s). */
  readonly initialDelayMaxMs?: number;
  /** Limit of the reads of one attestation together, and then of its POST (default 10 s). */
  readonly timeoutMs?: number;
  /** Objects read at once (default 4). */
  readonly readConcurrency?: number;
  /**
   * Delays after a failed attestation (default 1 s doubling to 5 min, plus up to 20 %); a
   * refused one (a 4xx but 408 and 429) waits `maxMs`, a Retry-After at most `maxMs`.
   */
  readonly backoff?: { readonly baseMs?: number; readonly maxMs?: number };
  /** Random source in [0, 1) of every delay (default `Math.random`). */
  readonly random?: () => number;
  /** Waits `ms` or until `signal` aborts (default: a timer that does not keep the process alive). */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
  /** Re-read the TLS files at most this often (default 1 s). */
  readonly tlsCheckIntervalMs?: number;
  /**
   * Whether this replica is the runtime's attestor (default: always). One is enough for the KCP:
   * a replica for which this is false attests once, for the list, and then only once it is true,
   * looking every {@link standbyCheckMs}; it attests at once when its turn comes.
   */
  readonly isActive?: () => boolean;
  /** How often a standby replica looks whether it is the attestor now (default 15 s). */
  readonly standbyCheckMs?: number;
}

/** The attestor was misconfigured. */
export class RuntimeAttestorError extends Error {
  override readonly name = 'RuntimeAttestorError';
}

// An answer lists at most MAX_ATTESTED_OBJECTS refs, a few KiB; anything near this is not one.
const MAX_ANSWER_BYTES = 256 * 1024;
// Jitter added to backoff, Retry-After and refusal delays.
const JITTER = 0.2;

const unrefSleep = (ms: number, signal: AbortSignal): Promise<void> =>
  delay(ms, undefined, { signal, ref: false });

/**
 * The runtime end of the attestation (docs/attestation.md): now and then it reads the
 * resourceVersion of every object the KCP asked about and POSTs them to the KCP listener over
 * the drift channel's mutual TLS; the answer says what to read next time and when. The first
 * attestation, after a random delay (a KCP restart or a fleet-wide webhook rollout must not bring
 * every runtime at once), carries nothing: the KCP answers with the list. A failed attestation
 * is retried with jittered exponential backoff on the same list (read again); unreadable objects
 * are attested with an empty resourceVersion, which makes the KCP re-apply: never wrong, only
 * slower.
 */
export class RuntimeAttestor {
  private readonly target: URL;
  private readonly metrics: AttestationMetrics;
  private readonly tls: ReloadingTlsAgent;
  private readonly backoff: Backoff;
  private readonly capMs: number;
  private readonly random: () => number;
  private readonly read: VersionReader;
  private readonly lifetime = new AbortController();
  private check: readonly ManagedRef[] = [];
  /** The latest answer's challenge, echoed in the next attestation. */
  private challenge: string | undefined;
  private loop: Promise<void> | undefined;
  private activePost: PostHandle | undefined;
  private failures = 0;
  private refusedStatus: number | undefined;

  constructor(private readonly opts: RuntimeAttestorOptions) {
    const target = listenerEndpoint(opts.url, ATTESTATION_PATH);
    if (!(target instanceof URL)) throw new RuntimeAttestorError(target.message, { cause: target.cause });
    if (!((opts.readConcurrency ?? 1) >= 1) || !((opts.timeoutMs ?? 1) > 0))
      throw new RuntimeAttestorError('readConcurrency must be at least 1 and timeoutMs positive');
    this.target = target;
    const timeoutMs = opts.timeoutMs ?? 10_000;
    if (opts.readVersion) this.read = opts.readVersion;
    else if (opts.access) this.read = kubeVersionReader(opts.access, timeoutMs);
    else throw new RuntimeAttestorError('the attestor needs the cluster access or a reader');
    this.metrics = createAttestationMetrics(opts.registry ?? new Registry());
    this.random = opts.random ?? Math.random;
    this.capMs = opts.backoff?.maxMs ?? 5 * 60_000;
    this.backoff = new Backoff({
      baseMs: opts.backoff?.baseMs ?? 1000,
      maxMs: this.capMs,
      jitter: JITTER,
      random: this.random,
    });
    this.tls = new ReloadingTlsAgent({
      files: opts.tls,
      checkIntervalMs: opts.tlsCheckIntervalMs ?? 1000,
      idleSocketMs: 30_000,
      logger: opts.logger,
      // The drift forwarder reads the same files and counts their reloads.
      onReload: () => undefined,
    });
  }

  /** Starts attesting, after the initial delay; a second call does nothing, nor one after {@link stop}. */
  start(): void {
    if (this.stopped()) return;
    this.loop ??= this.run().catch((error: unknown) => {
      this.opts.logger.error({ err: error }, 'the attestation loop ended unexpectedly');
    });
  }

  /** Ends the loop: aborts the wait, the reads and the POST in flight, and closes the connection. */
  async stop(): Promise<void> {
    this.lifetime.abort();
    this.activePost?.abort(new RuntimeAttestorError('the attestor stopped'));
    await this.loop;
    this.tls.destroy();
  }

  private async run(): Promise<void> {
    await this.sleep((this.opts.initialDelayMaxMs ?? 30_000) * this.random());
    const active = this.opts.isActive ?? ((): boolean => true);
    let listed = false;
    while (!this.stopped()) {
      // A standby keeps the list it was answered and waits for its turn.
      if (listed && !active()) {
        await this.sleep(this.opts.standbyCheckMs ?? 15_000);
        continue;
      }
      const exchange = await this.exchange();
      if (exchange === undefined) break;
      if (exchange.kind === 'answered') listed = true;
      await this.sleep(this.settle(exchange));
    }
  }

  /** One attestation: read, POST, judge the answer; undefined when stopped meanwhile. */
  private async exchange(): Promise<AttestationExchange | undefined> {
    const timeoutMs = this.opts.timeoutMs ?? 10_000;
    const deadline = AbortSignal.any([this.lifetime.signal, AbortSignal.timeout(timeoutMs)]);
    const objects = await readVersions(this.check, this.read, this.opts.readConcurrency ?? 4, deadline);
    if (this.stopped()) return undefined;
    let agent: Agent;
    try {
      agent = await this.tls.current();
    } catch (error) {
      return { kind: 'retry', why: `no usable client certificate: ${errorLine(error)}` };
    }
    // stop() may have come while the files were read; it could not abort a request not yet made.
    if (this.stopped()) return undefined;
    const body: Attestation = { objects, challenge: this.challenge };
    try {
      const post = postJson(this.target, agent, JSON.stringify(body), timeoutMs, MAX_ANSWER_BYTES);
      this.activePost = post;
      const answer = await post.answer.finally(() => {
        this.activePost = undefined;
      });
      return judgeExchange(answer.status, answer.retryAfter, answer.body, this.capMs);
    } catch (error) {
      if (this.stopped()) return undefined;
      // A refused handshake may mean a renewed certificate: read the files again next time.
      this.tls.invalidate();
      return { kind: 'retry', why: errorLine(error) };
    }
  }

  /** Counts and logs the exchange, keeps the answer's list; returns the wait before the next one. */
  private settle(x: AttestationExchange): number {
    const log = this.opts.logger;
    if (x.kind === 'answered') {
      const { inSync, check, nextAfterSeconds } = x.answer;
      this.metrics.attestations.inc({ result: inSync ? 'in_sync' : 'out_of_sync' });
      this.metrics.lastSuccess.set(Date.now() / 1000);
      if (this.failures > 0) log.info({ failures: this.failures }, 'attestation answered again');
      this.failures = 0;
      this.refusedStatus = undefined;
      this.backoff.reset();
      this.check = check;
      this.challenge = x.answer.challenge;
      log.debug({ inSync, check: check.length, nextAfterSeconds }, 'attestation answered');
      return answerWaitMs(nextAfterSeconds, this.random);
    }
    this.metrics.attestations.inc({ result: 'failed' });
    this.failures++;
    if (x.kind === 'refused') {
      // Retrying soon would not help (an older KCP without the route, a refused certificate).
      const wait = this.capMs * (1 + JITTER * this.random());
      if (this.refusedStatus !== x.status)
        log.warn(
          { status: x.status, retryInSeconds: Math.round(wait / 1000) },
          'the KCP listener refused the attestation',
        );
      this.refusedStatus = x.status;
      return wait;
    }
    const wait = retryWaitMs(this.backoff.next(), x.retryAfterMs, JITTER, this.random);
    const fields = { why: x.why, failures: this.failures, retryInMs: Math.round(wait) };
    // One warning per run of failures, the rest at debug: a KCP away for hours must not fill the log.
    if (this.failures === 1) log.warn(fields, 'attestation failed; retrying with backoff');
    else log.debug(fields, 'attestation failed again');
    return wait;
  }

  private async sleep(ms: number): Promise<void> {
    if (this.stopped()) return;
    await (this.opts.sleep ?? unrefSleep)(ms, this.lifetime.signal).catch(() => undefined);
  }

  // A method, not the field: TypeScript would keep a narrowing across an await.
  private stopped(): boolean {
    return this.lifetime.signal.aborted;
  }
}
