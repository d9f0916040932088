import http from 'node:http';
import https from 'node:https';
import type { ClusterAccess } from './cluster-access.js';
import { KubeApiError, isKubeStatus } from './kube-errors.js';
import { AnswerTooLargeError, RequestAbortedError, RequestDeadlineError } from './request-limits.js';
import { trimEndChar } from '../text/trim-char.js';

/** One API request. */
export interface KubeRequest {
  readonly method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** E.g. `/apis/rt-bootstrapper.kyma-project.io/v1alpha1/namespaces/kcp-system/runtimebootstrappers/x/status`. */
  readonly path: string;
  readonly query?: Readonly<Record<string, string | number | boolean | undefined>>;
  readonly body?: unknown;
  /** For PATCH: `application/merge-patch+json` (default), `application/json-patch+json`, `application/apply-patch+yaml`. */
  readonly contentType?: string;
  /**
   * Without an answer for this long (no byte sent or received), the request fails (default 30 s).
   * The access's request limits (./request-limits.ts) bound the whole call besides.
   */
  readonly timeoutMs?: number;
  /**
   * false: a successful answer's body is read to its end (the connection is reused) but not
   * parsed, and the call resolves with undefined: writes whose result nobody reads.
   */
  readonly parseResponse?: boolean;
  /**
   * The Accept header (default `application/json`); e.g. metadata only:
   * `application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1`.
   */
  readonly accept?: string;
}

// Error bodies are small Status objects; never buffer an unbounded one.
const MAX_ERROR_BODY = 1 << 20;

/**
 * A raw, time-bounded request through a kubeconfig's credentials ({@link ClusterAccess}): for
 * what the generated client makes awkward (status subresources of custom resources, patch
 * content types) and for calls that must never hang (a runtime that blackholes traffic). An
 * access with request limits (a runtime's) bounds the answer's size and the call's whole
 * time and ends it when the process stops: {@link AnswerTooLargeError}, {@link RequestDeadlineError},
 * {@link RequestAbortedError}.
 */
export async function kubeRequest<T>(kc: ClusterAccess, r: KubeRequest): Promise<T> {
  const cluster = kc.getCurrentCluster();
  if (cluster === null) throw new KubeApiError('kubeconfig has no current cluster');
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(r.query ?? {}))
    if (v !== undefined && v !== '') params.set(k, String(v));
  const qs = params.toString();
  const url = new URL(`${trimEndChar(cluster.server, '/')}${r.path}${qs === '' ? '' : `?${qs}`}`);
  const limits = kc.requestLimits;
  const what = `${r.method} ${url.pathname}`;
  if (limits?.signal?.aborted === true) throw new RequestAbortedError(what);
  const options: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(options);
  const headers: http.OutgoingHttpHeaders = {
    ...(options.headers && !Array.isArray(options.headers)
      ? (options.headers as http.OutgoingHttpHeaders)
      : {}),
    Accept: r.accept ?? 'application/json',
    'User-Agent': 'rt-bootstrapper',
  };
  let payload: string | undefined;
  if (r.body !== undefined) {
    payload = JSON.stringify(r.body);
    headers['Content-Type'] =
      r.method === 'PATCH' ? (r.contentType ?? 'application/merge-patch+json') : 'application/json';
    headers['Content-Length'] = Buffer.byteLength(payload);
  }
  const mod = url.protocol === 'http:' ? http : https;
  const skipBody = r.parseResponse === false;
  const answer = new Promise<{ code: number; text: string }>((resolve, reject) => {
    let settled = false;
    let deadline: NodeJS.Timeout | undefined;
    const onAbort = (): void => {
      fail(new RequestAbortedError(what));
    };
    const finish = (): void => {
      settled = true;
      clearTimeout(deadline);
      limits?.signal?.removeEventListener('abort', onAbort);
    };
    // A bound broken: the typed error is the outcome, whatever the socket reports after it.
    const fail = (error: Error): void => {
      if (settled) return;
      finish();
      reject(error);
      req.destroy(error);
    };
    const req = mod.request(url, { ...options, method: r.method, headers }, (res) => {
      const success = (res.statusCode ?? 0) < 300;
      const chunks: Buffer[] = [];
      let size = 0;
      res.on('data', (c: Buffer) => {
        if (settled) return;
        size += c.length;
        if (size > (limits?.maxAnswerBytes ?? Infinity)) {
          fail(new AnswerTooLargeError(what, limits?.maxAnswerBytes ?? 0));
          return;
        }
        if (success && skipBody) return;
        if (size <= MAX_ERROR_BODY || success) chunks.push(c);
      });
      res.on('end', () => {
        if (settled) return;
        finish();
        resolve({ code: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', (err) => {
        if (settled) return;
        finish();
        reject(new KubeApiError(`${what} failed: ${err.message}`, { cause: err }));
      });
    });
    // An inactivity timeout of the request's socket: no timer and no AbortSignal per request
    // (a deadline, for a cluster not trusted, is the one timer).
    let timedOut = false;
    req.setTimeout(r.timeoutMs ?? 30_000, () => {
      timedOut = true;
      req.destroy(new Error(`no answer within ${r.timeoutMs ?? 30_000} ms`));
    });
    if (limits !== undefined) {
      deadline = setTimeout(() => {
        fail(new RequestDeadlineError(what, limits.deadlineMs));
      }, limits.deadlineMs);
      limits.signal?.addEventListener('abort', onAbort, { once: true });
    }
    req.on('error', (err) => {
      if (settled) return;
      finish();
      reject(
        new KubeApiError(timedOut ? `${what} timed out` : `${what} failed: ${err.message}`, {
          cause: err,
          reason: timedOut ? 'Timeout' : undefined,
        }),
      );
    });
    req.end(payload);
  });
  const { code, text } = await paced(answer, limits?.pace);
  let parsed: unknown;
  try {
    parsed = text === '' ? undefined : JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (code >= 200 && code < 300) return parsed as T;
  if (isKubeStatus(parsed)) throw KubeApiError.fromStatus(parsed, code);
  throw new KubeApiError(`${r.method} ${url.pathname}: HTTP ${code}`, { statusCode: code });
}

/** `answer`'s outcome once `pace` lets its caller go on. */
async function paced<T>(answer: Promise<T>, pace: (() => Promise<void>) | undefined): Promise<T> {
  if (pace === undefined) return answer;
  try {
    return await answer;
  } finally {
    await pace();
  }
}
