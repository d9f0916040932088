/**
 * One bounded HTTP(S) request to a registry or its token endpoint: a deadline, an abort signal, a
 * cap on the body read, and a few redirects followed (credentials only to the same origin).
 * Failures to get an answer are a {@link RegistryRequestError} whose message names the host and
 * the cause, never a header or a query.
 */
import http from 'node:http';
import https from 'node:https';

/** A registry's answer. */
export interface RegistryAnswer {
  readonly status: number;
  readonly headers: http.IncomingHttpHeaders;
  /** The body, at most `maxBodyBytes` of it (empty for HEAD). */
  readonly body: string;
  /** The URL that answered (after redirects). */
  readonly url: URL;
}

/** What one request needs. */
export interface RegistryRequest {
  readonly method: 'GET' | 'HEAD';
  readonly url: URL;
  readonly headers: Readonly<Record<string, string>>;
  /** Sent to the request's origin only: a redirect elsewhere drops it. */
  readonly authorization?: string | undefined;
  readonly agents: { readonly http: http.Agent; readonly https: https.Agent };
  readonly timeoutMs: number;
  readonly signal?: AbortSignal | undefined;
  readonly maxBodyBytes?: number;
}

/** No answer: the connection failed, timed out, or was aborted. */
export class RegistryRequestError extends Error {
  override readonly name = 'RegistryRequestError';
  constructor(
    message: string,
    /** Why: a system or TLS error code, `timeout`, `aborted`, `redirects`. */
    readonly reason: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

const MAX_REDIRECTS = 3;
const DEFAULT_MAX_BODY = 64 * 1024;

function errorCode(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : error instanceof Error ? error.name : 'error';
}

function once(r: RegistryRequest, url: URL, authorization: string | undefined): Promise<RegistryAnswer> {
  const deadline = AbortSignal.timeout(r.timeoutMs);
  const signal = r.signal ? AbortSignal.any([r.signal, deadline]) : deadline;
  const secure = url.protocol === 'https:';
  const module = secure ? https : http;
  return new Promise<RegistryAnswer>((resolve, reject) => {
    if (signal.aborted) {
      reject(abortError(url, r.signal, deadline));
      return;
    }
    const req = module.request(
      url,
      {
        method: r.method,
        agent: secure ? r.agents.https : r.agents.http,
        headers: { ...r.headers, ...(authorization !== undefined ? { authorization } : {}) },
        signal,
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        const max = r.maxBodyBytes ?? DEFAULT_MAX_BODY;
        res.on('data', (chunk: Buffer) => {
          if (size < max) chunks.push(chunk.subarray(0, max - size));
          size += chunk.length;
        });
        res.on('end', () => {
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString('utf8'),
            url,
          });
        });
        res.on('error', (error) => {
          reject(failure(url, error, r.signal, deadline));
        });
      },
    );
    req.on('error', (error) => {
      reject(failure(url, error, r.signal, deadline));
    });
    req.end();
  });
}

function abortError(url: URL, outer: AbortSignal | undefined, deadline: AbortSignal): RegistryRequestError {
  return outer?.aborted === true
    ? new RegistryRequestError(`request to ${url.host} aborted`, 'aborted', { cause: outer.reason })
    : new RegistryRequestError(`no answer from ${url.host} in time`, 'timeout', { cause: deadline.reason });
}

function failure(
  url: URL,
  error: unknown,
  outer: AbortSignal | undefined,
  deadline: AbortSignal,
): RegistryRequestError {
  if (outer?.aborted === true || deadline.aborted) return abortError(url, outer, deadline);
  const code = errorCode(error);
  return new RegistryRequestError(`cannot reach ${url.host}: ${code}`, code, { cause: error });
}

/**
 * Sends the request, following up to three redirects (as registries send token and blob requests
 * to a CDN); the authorization goes only to the first URL's origin.
 *
 * @throws RegistryRequestError when no answer comes.
 */
export async function registryRequest(r: RegistryRequest): Promise<RegistryAnswer> {
  let url = r.url;
  for (let hop = 0; ; hop++) {
    const answer = await once(r, url, url.origin === r.url.origin ? r.authorization : undefined);
    const location = answer.headers.location;
    if (answer.status < 300 || answer.status >= 400 || location === undefined || answer.status === 304)
      return answer;
    if (hop >= MAX_REDIRECTS)
      throw new RegistryRequestError(`too many redirects from ${r.url.host}`, 'redirects');
    let next: URL;
    try {
      next = new URL(location, url);
    } catch (cause) {
      throw new RegistryRequestError(`a bad redirect from ${url.host}`, 'redirects', { cause });
    }
    // Never from HTTPS down to plain HTTP.
    if (url.protocol === 'https:' && next.protocol !== 'https:')
      throw new RegistryRequestError(`a redirect from ${url.host} to plain HTTP`, 'redirects');
    url = next;
  }
}
