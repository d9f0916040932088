import type { IncomingMessage } from 'node:http';

/** The body exceeded the limit (HTTP 413). */
export class BodyTooLargeError extends Error {
  override readonly name = 'BodyTooLargeError';

  constructor(readonly limit: number) {
    super(`request body exceeds ${limit} bytes`);
  }
}

/**
 * Reads a request body of at most `limit` bytes. The declared length is checked before reading
 * and the streamed size while reading (chunked bodies declare none); past the limit the rest is
 * discarded, so the peer can read our 413 rather than hit a reset.
 */
export function readLimitedBody(req: IncomingMessage, limit: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const declared = declaredLength(req);
    if (declared > limit) {
      req.resume();
      reject(new BodyTooLargeError(limit));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > limit) {
        req.off('data', onData);
        req.resume();
        reject(new BodyTooLargeError(limit));
        return;
      }
      chunks.push(chunk);
    };
    req.on('data', onData);
    req.on('end', () => {
      // A small body (an AdmissionReview, a drift event) usually arrives in one chunk: no copy.
      resolve(chunks.length === 1 && chunks[0] ? chunks[0] : Buffer.concat(chunks, size));
    });
    req.on('error', (cause) => {
      reject(new Error('the request body could not be read', { cause }));
    });
  });
}

/**
 * The request's Content-Length, or -1 when it declares none (a chunked body). From the raw
 * headers: `req.headers` builds an object of every header on first use, a measurable part of a
 * request that reads nothing else from it.
 */
export function declaredLength(req: IncomingMessage): number {
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    if (name?.length === 14 && name.toLowerCase() === 'content-length') return Number(raw[i + 1] ?? '0');
  }
  return -1;
}
