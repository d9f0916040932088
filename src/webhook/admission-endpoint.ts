import { AdmissionDecodeError, decodeAdmissionReview, encodeAdmissionResponse } from './admission-review.js';
import { handleAdmission, type AdmissionContext } from './admission-handler.js';
import type { AdmissionResult } from './webhook-metrics.js';

/** An HTTP answer to one admission request. */
export interface EndpointAnswer {
  readonly status: 200 | 400;
  /** The AdmissionReview (200) or the reason (400). */
  readonly body: string;
  readonly result: AdmissionResult;
}

/** The `/mutate` endpoint behind the HTTP layer: a request body in, the answer out. */
export class AdmissionEndpoint {
  constructor(private readonly context: AdmissionContext) {}

  /** Decides the answer to one request body. */
  async answer(body: Buffer): Promise<EndpointAnswer> {
    let request;
    try {
      request = decodeAdmissionReview(body);
    } catch (error) {
      const reason = error instanceof AdmissionDecodeError ? error.message : 'malformed AdmissionReview';
      return { status: 400, body: reason, result: 'bad_request' };
    }
    const handled = await handleAdmission(request, this.context);
    return { status: 200, body: encodeAdmissionResponse(handled.answer), result: handled.result };
  }
}
