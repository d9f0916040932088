import type { IncomingMessage } from 'node:http';
import {
  AttestationError,
  parseAttestation,
  type Attestation,
  type AttestationAnswer,
} from '../api/attestation.js';
import { BodyTooLargeError, readLimitedBody } from './limited-body.js';

/** How the KCP answers an attestation: the answer, or "ask another replica" (503 + Retry-After). */
export type AttestationReply =
  | { readonly status: 200; readonly answer: AttestationAnswer }
  | { readonly status: 503; readonly reason: string; readonly retryAfterSeconds: number };

/** Takes a verified runtime's attestation; runs before the answer is sent, so it must not wait. */
export type AttestationHandler = (
  runtimeId: string,
  attestation: Attestation,
  receivedAt: number,
) => AttestationReply;

/** Sends one answer (status, body, extra headers). */
export type Reply = (status: number, body: string, headers?: Record<string, string>) => void;

/** An attestation of about 20 objects is 3 KiB; the wire format allows 200 of them. */
export const ATTESTATION_BODY_LIMIT = 64 * 1024;

/**
 * Reads, parses and hands one attestation to `handler` (../api/attestation.ts); answers 400 or 413
 * for a bad body, 500 when the handler throws (`onError` says why), else what the handler replied.
 * A 503 closes the connection, so the runtime's retry may reach another replica.
 */
export async function receiveAttestation(
  req: IncomingMessage,
  runtimeId: string,
  handler: AttestationHandler,
  reply: Reply,
  onError: (error: unknown) => void,
): Promise<void> {
  let attestation: Attestation;
  try {
    attestation = parseAttestation(await readLimitedBody(req, ATTESTATION_BODY_LIMIT));
  } catch (error) {
    if (error instanceof BodyTooLargeError) reply(413, error.message, { connection: 'close' });
    else if (error instanceof AttestationError) reply(400, error.message);
    else reply(400, 'unreadable body');
    return;
  }
  let answer: AttestationReply;
  try {
    answer = handler(runtimeId, attestation, Date.now());
  } catch (error) {
    onError(error);
    reply(500, 'attestation not accepted');
    return;
  }
  if (answer.status === 200) {
    reply(200, JSON.stringify(answer.answer), { 'content-type': 'application/json' });
  } else {
    reply(503, answer.reason, { 'retry-after': String(answer.retryAfterSeconds), connection: 'close' });
  }
}
