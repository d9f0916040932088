import { request, type Agent } from 'node:https';

/** The parts of the listener's answer the forwarder acts on. */
export interface PostAnswer {
  readonly status: number;
  readonly retryAfter: string | undefined;
}

/** One POST in flight: its answer, and a way to abandon it. */
export interface PostHandle {
  /** Resolves with the answer once its body was read; rejects on network errors and timeout. */
  readonly answer: Promise<PostAnswer>;
  abort(reason: Error): void;
}

/**
 * POSTs a JSON body through `agent` and reads the answer to its end, which hands a keep-alive
 * socket back to the agent for the next event. `timeoutMs` bounds the whole exchange,
 * connecting and the TLS handshake included.
 */
export function postJson(url: URL, agent: Agent, body: string, timeoutMs: number): PostHandle {
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
      // The body is a short reason; only the status and Retry-After matter.
      res.resume();
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, retryAfter: firstValue(res.headers['retry-after']) });
      });
      res.on('error', fail);
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
