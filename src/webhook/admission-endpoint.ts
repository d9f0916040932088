import { AdmissionDecodeError, decodeAdmissionReview, encodeAdmissionResponse } from './admission-review.js';
import {
  handleAdmission,
  replayAdmission,
  type AdmissionContext,
  type AdmissionRecord,
} from './admission-handler.js';
import { AdmissionMemo } from './admission-memo.js';
import type { AdmissionResult } from './webhook-metrics.js';

/** An HTTP answer to one admission request. */
export interface EndpointAnswer {
  readonly status: 200 | 400;
  /** The AdmissionReview (200) or the reason (400). */
  readonly body: string | Buffer;
  readonly result: AdmissionResult;
}

/**
 * Answers kept for identical requests are at most this large. A ReplicaSet's Pod gets a few
 * kilobytes; an answer for a Pod of hundreds of containers, kept 512 times, would hold hundreds
 * of megabytes.
 */
export const MEMO_ANSWER_LIMIT_BYTES = 16 * 1024;

/**
 * The `/mutate` endpoint behind the HTTP layer: a request body in, the answer out. Identical
 * requests (uid aside) reuse the answer decided for the first of them (./admission-memo.ts).
 */
export class AdmissionEndpoint {
  private readonly memo: AdmissionMemo<AdmissionRecord> | undefined;

  constructor(
    private readonly context: AdmissionContext,
    /** Answers kept for identical requests (0 turns the memo off). */
    memoEntries: number,
  ) {
    this.memo = memoEntries > 0 ? new AdmissionMemo(memoEntries) : undefined;
  }

  /** Decides the answer to one request body. */
  async answer(body: Buffer): Promise<EndpointAnswer> {
    const probe = this.memo?.probe(body);
    const record = probe && this.memo?.get(probe.key);
    if (probe && record) {
      // Reused answers come from caches: no promise turn unless the context needs I/O.
      const replay = replayAdmission(record, probe.uid, this.context);
      const replayed = replay instanceof Promise ? await replay : replay;
      this.context.metrics.memo.inc(replayed ? 'hit' : 'stale');
      if (replayed) return { status: 200, body: replayed.body, result: replayed.result };
      this.memo?.delete(probe.key);
    }
    let request;
    try {
      request = decodeAdmissionReview(body);
    } catch (error) {
      const reason = error instanceof AdmissionDecodeError ? error.message : 'malformed AdmissionReview';
      return { status: 400, body: reason, result: 'bad_request' };
    }
    const handled = await handleAdmission(request, this.context);
    if (!handled.record)
      return { status: 200, body: encodeAdmissionResponse(handled.answer), result: handled.result };
    const response = handled.record.respond(request.uid);
    if (
      probe &&
      response.length <= MEMO_ANSWER_LIMIT_BYTES &&
      this.memo?.seenBefore(probe.key) === true &&
      AdmissionMemo.keyable(body, probe, request.uid)
    )
      this.memo.set(probe.key, handled.record);
    return { status: 200, body: response, result: handled.result };
  }
}
