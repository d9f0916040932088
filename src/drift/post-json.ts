import { request, type Agent } from 'node:https';
import { readLimitedBody } from './limited-body.js';

/** The parts of the listener's answer the sender acts on. */
export interface PostAnswer {
  readonly status: number;
  readonly retryAfter: string | undefined;
  /** The answer's body when asked for (`maxAnswerBytes` > 0), else empty. */
  readonly body: Buffer;
}

/** One POST in flight: its answer, and a way to abandon it. */
export interface PostHandle {
  /** Resolves with the answer once its body was read; rejects on network errors and timeout. */
  readonly answer: Promise<PostAnswer>;
  abort(reason: Error): void;
}

const EMPTY = Buffer.alloc(0);

/**
 * POSTs a JSON body through `agent` and reads the answer to its end, which hands a keep-alive
 * socket back to the agent for the next event. `timeoutMs` bounds the whole exchange,
 * connecting and the TLS handshake included. With `maxAnswerBytes` > 0 the answer's body is
 * kept, up to that size: a longer one fails the POST and closes the connection.
 */
export function postJson(
  url: URL,
  agent: Agent,
  body: string,
  timeoutMs: number,
  maxAnswerBytes = 0,
): PostHandle {
  const req = request(url, {
    method: 'POST',
    agent,
    headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
  });
  const answer = new Promise<PostAnswer>((resolve, reject) => {
    const timer = setTimeout(() => {
      req.destroy(new Error(`no answer within ${timeoutMs} ms`));
    }, timeoutMs);
    const fail = (error: Error): void => {
      clearTimeout(timer);
      reject(error);
    };
    req.on('response', (res) => {
      const done = (answerBody: Buffer): void => {
        clearTimeout(timer);
        resolve({
          status: res.statusCode ?? 0,
          retryAfter: firstValue(res.headers['retry-after']),
          body: answerBody,
        });
      };
      if (maxAnswerBytes > 0) {
        readLimitedBody(res, maxAnswerBytes).then(done, (cause: unknown) => {
          fail(new Error(`the answer could not be read within ${maxAnswerBytes} bytes`, { cause }));
          // Rather than drain an oversized answer, give up the connection.
          req.destroy();
        });
      } else {
        // The body is a short reason; only the status and Retry-After matter.
        res.resume();
        res.on('end', () => {
          done(EMPTY);
        });
        res.on('error', fail);
      }
      res.on('close', () => {
        // Ends without 'end' when the connection dies mid-answer; a settled promise ignores this.
        if (!res.complete) fail(new Error('the answer was cut off'));
      });
    });
    req.on('error', fail);
  });
  req.end(body);
  return {
    answer,
    abort(reason: Error): void {
      req.destroy(reason);
    },
  };
}

function firstValue(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value[0] : value;
}
