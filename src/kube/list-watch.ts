/**
 * The real {@link ListerWatcher}: plain HTTP GETs against an API server described by a
 * {@link ClusterAccess} (client-node's `KubeConfig` or `KubeconfigLite`), for any collection
 * path (core, grouped, CRDs, namespaced or not). The watch is streamed with node's http(s)
 * module and split into newline-delimited JSON here, because client-node's `Watch` offers
 * neither a server-side timeout nor control over restarts; the reflector owns both.
 */
import http from 'node:http';
import https from 'node:https';
import type { ClusterAccess } from './cluster-access.js';
import { KubeApiError, isKubeStatus } from './kube-errors.js';
import { MAX_OBJECT_ANSWER_BYTES } from './list-budget.js';
import { AnswerTooLargeError, RequestAbortedError, RequestDeadlineError } from './request-limits.js';
import type {
  ListOptions,
  ListResult,
  ListerWatcher,
  WatchEventCallback,
  WatchEventType,
  WatchOptions,
} from './lister-watcher.js';
import { trimEndChar } from '../text/trim-char.js';

/** Options of a {@link KubeListWatch}. */
export interface KubeListWatchOptions {
  /** Client-side timeout of one list page (default 60 s). */
  readonly listTimeoutMs?: number;
  /** Sent as `User-Agent` (default `rt-bootstrapper`). */
  readonly userAgent?: string;
  /**
   * List and watch the items' metadata alone (`PartialObjectMetadata`): for caches that read
   * nothing else, so a Pod's spec and status or a Secret's data never reach the process.
   */
  readonly metadataOnly?: boolean;
}

/** The Accept header of a metadata-only list, with JSON as the fallback of a server that cannot. */
export const METADATA_LIST_ACCEPT =
  'application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json';
/** The Accept header of a metadata-only watch (its events carry `PartialObjectMetadata`). */
export const METADATA_WATCH_ACCEPT =
  'application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json';

// Error bodies are small Status objects; never buffer an unbounded one.
const MAX_ERROR_BODY = 1 << 20;
/**
 * One watch event at most, when the access sets no cap of its own: an object is at most about
 * 1.5 MiB in etcd, so no event of a real API server comes near.
 */
export const DEFAULT_MAX_WATCH_EVENT_BYTES = MAX_OBJECT_ANSWER_BYTES;
const EVENT_TYPES = new Set<string>(['ADDED', 'MODIFIED', 'DELETED', 'BOOKMARK', 'ERROR']);
const NEWLINE = 0x0a;

type Query = Record<string, string | number | boolean | undefined>;

/**
 * Lists and watches the collection at `path`, e.g. `/api/v1/namespaces/kcp-system/secrets`
 * or `/apis/certificates.k8s.io/v1beta1/clustertrustbundles`.
 */
export class KubeListWatch<T> implements ListerWatcher<T> {
  constructor(
    private readonly kc: ClusterAccess,
    private readonly path: string,
    private readonly opts: KubeListWatchOptions = {},
  ) {}

  async list(opts: ListOptions, signal: AbortSignal): Promise<ListResult<T>> {
    const limits = this.kc.requestLimits;
    const timeoutMs = Math.min(this.opts.listTimeoutMs ?? 60_000, limits?.deadlineMs ?? Infinity);
    const timeout = AbortSignal.timeout(timeoutMs);
    const stopping = limits?.signal;
    const sig = AbortSignal.any(stopping ? [signal, timeout, stopping] : [signal, timeout]);
    const query: Query = {
      limit: opts.limit !== undefined && opts.limit > 0 ? opts.limit : undefined,
      continue: opts.continue,
      resourceVersion: opts.resourceVersion,
      labelSelector: opts.labelSelector,
      fieldSelector: opts.fieldSelector,
    };
    // The page's own cap (its byte budget) and the access's, whichever is smaller.
    const cap = Math.min(limits?.maxAnswerBytes ?? Infinity, opts.maxBytes ?? Infinity);
    let body: Buffer;
    try {
      const res = await this.get(
        query,
        sig,
        false,
        this.opts.metadataOnly === true ? METADATA_LIST_ACCEPT : undefined,
      );
      body = await readBody(res, cap, `list ${this.path}`);
    } catch (err) {
      if (!signal.aborted && stopping?.aborted === true) throw new RequestAbortedError(`list ${this.path}`);
      if (!signal.aborted && timeout.aborted) {
        if (limits !== undefined && timeoutMs === limits.deadlineMs)
          throw new RequestDeadlineError(`list ${this.path}`, timeoutMs);
        throw new KubeApiError(`list ${this.path} timed out`, { reason: 'Timeout', cause: err });
      }
      throw err;
    }
    return { ...parseList<T>(body.toString('utf8'), this.path), bytes: body.length };
  }

  async watch(opts: WatchOptions, onEvent: WatchEventCallback<T>, signal: AbortSignal): Promise<void> {
    const query: Query = {
      watch: 1,
      resourceVersion: opts.resourceVersion,
      timeoutSeconds: opts.timeoutSeconds,
      allowWatchBookmarks: opts.allowWatchBookmarks,
      labelSelector: opts.labelSelector,
      fieldSelector: opts.fieldSelector,
    };
    let res: http.IncomingMessage;
    const stopping = this.kc.requestLimits?.signal;
    try {
      res = await this.get(
        query,
        stopping ? AbortSignal.any([signal, stopping]) : signal,
        true,
        this.opts.metadataOnly === true ? METADATA_WATCH_ACCEPT : undefined,
      );
    } catch (err) {
      if (signal.aborted) return;
      throw err;
    }
    const maxEvent = this.kc.requestLimits?.maxAnswerBytes ?? DEFAULT_MAX_WATCH_EVENT_BYTES;
    await new Promise<void>((resolve, reject) => {
      // The unfinished tail of the stream: chunks, joined once its newline arrives (never re-split).
      let pending: Buffer[] = [];
      let pendingBytes = 0;
      let settled = false;
      const finish = (err?: Error): void => {
        if (settled) return;
        settled = true;
        if (err !== undefined && !signal.aborted) reject(err);
        else resolve();
      };
      const fail = (err: Error): void => {
        finish(err);
        res.destroy();
      };
      const deliver = (line: string): void => {
        if (line.trim() === '' || settled || signal.aborted) return;
        let event: unknown;
        try {
          event = JSON.parse(line);
        } catch (err) {
          fail(new KubeApiError(`malformed watch event on ${this.path}`, { cause: err }));
          return;
        }
        const { type, object } = (event ?? {}) as { type?: unknown; object?: unknown };
        if (typeof type !== 'string' || typeof object !== 'object' || object === null) {
          fail(new KubeApiError(`malformed watch event on ${this.path}: ${line.slice(0, 200)}`));
          return;
        }
        if (!EVENT_TYPES.has(type)) return; // a type from the future: skip, as client-go does
        onEvent(type as WatchEventType, object);
      };
      const tooLarge = (): void => {
        fail(new AnswerTooLargeError(`watch ${this.path}: one event`, maxEvent));
      };
      const take = (piece: Buffer): string => {
        const line = pending.length === 0 ? piece : Buffer.concat([...pending, piece]);
        pending = [];
        pendingBytes = 0;
        return line.toString('utf8');
      };
      res.on('data', (chunk: Buffer) => {
        // A chunk may hold several events or a fragment of one.
        let from = 0;
        try {
          for (let nl = chunk.indexOf(NEWLINE); nl >= 0 && !settled; nl = chunk.indexOf(NEWLINE, from)) {
            if (pendingBytes + nl - from > maxEvent) {
              tooLarge();
              return;
            }
            const line = take(chunk.subarray(from, nl));
            from = nl + 1;
            deliver(line);
          }
        } catch (err) {
          fail(new KubeApiError(`watch event handler failed on ${this.path}`, { cause: err }));
          return;
        }
        if (settled || from >= chunk.length) return;
        pending.push(chunk.subarray(from));
        pendingBytes += chunk.length - from;
        if (pendingBytes > maxEvent) tooLarge();
      });
      res.on('end', () => {
        try {
          deliver(take(Buffer.alloc(0)));
        } catch (err) {
          fail(new KubeApiError(`watch event handler failed on ${this.path}`, { cause: err }));
        }
        finish();
      });
      res.on('error', (err) => {
        finish(new KubeApiError(`watch ${this.path} broke: ${err.message}`, { cause: err }));
      });
      res.on('close', () => {
        // 'close' without 'end' is a dropped connection, not a server-side timeout.
        finish(res.complete ? undefined : new KubeApiError(`watch ${this.path} closed before its end`));
      });
    });
  }

  /** GET `path?query`; resolves with a 200 response, rejects with a `KubeApiError` otherwise. */
  private async get(
    query: Query,
    signal: AbortSignal,
    keepAlive = false,
    accept = 'application/json',
  ): Promise<http.IncomingMessage> {
    const cluster = this.kc.getCurrentCluster();
    if (cluster === null) throw new KubeApiError('kubeconfig has no current cluster');
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, String(v));
    const qs = params.toString();
    // Concatenate, not resolve: the server URL may carry a path prefix (proxies, Rancher).
    const url = new URL(`${trimEndChar(cluster.server, '/')}${this.path}${qs === '' ? '' : `?${qs}`}`);
    const options: https.RequestOptions = {};
    try {
      // Per request, so rotated tokens, exec credentials and client certificates are picked up.
      await this.kc.applyToHTTPSOptions(options);
    } catch (err) {
      throw new KubeApiError(`cannot apply kubeconfig credentials for ${cluster.server}`, { cause: err });
    }
    const headers: http.OutgoingHttpHeaders = {};
    if (options.headers !== undefined && !isHeaderList(options.headers))
      Object.assign(headers, options.headers);
    headers.Accept = accept;
    headers['User-Agent'] = this.opts.userAgent ?? 'rt-bootstrapper';
    const mod = url.protocol === 'http:' ? http : https;
    signal.throwIfAborted();
    const res = await new Promise<http.IncomingMessage>((resolve, reject) => {
      const req = mod.request(url, { ...options, method: 'GET', headers, signal }, resolve);
      req.on('error', (err) => {
        reject(
          signal.aborted
            ? err
            : new KubeApiError(`GET ${url.pathname} failed: ${err.message}`, { cause: err }),
        );
      });
      if (keepAlive) {
        // TCP keep-alive lets the kernel notice a dead peer under a quiet watch.
        req.on('socket', (socket) => socket.setKeepAlive(true, 30_000));
      }
      req.end();
    });
    const code = res.statusCode ?? 0;
    if (code === 200) return res;
    const body = await readBody(res, MAX_ERROR_BODY).catch(() => Buffer.alloc(0));
    throw errorFromResponse(code, body.toString('utf8'), url.pathname);
  }
}

function isHeaderList(h: http.OutgoingHttpHeaders | readonly string[]): h is readonly string[] {
  return Array.isArray(h);
}

/**
 * The body. Past `limit` bytes: with `what` (a successful answer), the call fails with
 * AnswerTooLargeError and the connection is dropped; without (an error body), the rest is read
 * and dropped.
 */
function readBody(res: http.IncomingMessage, limit: number, what?: string): Promise<Buffer> {
  return new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size <= limit) chunks.push(chunk);
      else if (what !== undefined) {
        reject(new AnswerTooLargeError(what, limit));
        res.destroy();
      }
    });
    res.on('end', () => {
      resolve(Buffer.concat(chunks));
    });
    res.on('error', (err) => {
      reject(new KubeApiError(`reading response failed: ${err.message}`, { cause: err }));
    });
    res.on('close', () => {
      // Aborted (a deadline, a stop) before its end: 'end' never comes.
      if (!res.complete) reject(new KubeApiError('the response ended early'));
    });
  });
}

function errorFromResponse(code: number, body: string, path: string): KubeApiError {
  let status: unknown;
  try {
    status = JSON.parse(body);
  } catch {
    status = undefined;
  }
  if (isKubeStatus(status)) return KubeApiError.fromStatus(status, code);
  const snippet = body.trim().slice(0, 200);
  return new KubeApiError(`GET ${path}: HTTP ${code}${snippet === '' ? '' : `: ${snippet}`}`, {
    statusCode: code,
  });
}

interface RawList {
  kind?: unknown;
  apiVersion?: unknown;
  metadata?: { resourceVersion?: unknown; continue?: unknown };
  items?: unknown;
}

function parseList<T>(text: string, path: string): ListResult<T> {
  let raw: RawList;
  try {
    raw = JSON.parse(text) as RawList;
  } catch (err) {
    throw new KubeApiError(`list ${path}: response is not JSON`, { statusCode: 200, cause: err });
  }
  if (typeof raw !== 'object' || !Array.isArray(raw.items)) {
    throw new KubeApiError(`list ${path}: response has no items`, { statusCode: 200 });
  }
  const rv = raw.metadata?.resourceVersion;
  const cont = raw.metadata?.continue;
  // Items of built-in lists come without kind/apiVersion; restore them from the list so
  // objects from a list look like objects from a watch.
  const kind = typeof raw.kind === 'string' && raw.kind.endsWith('List') ? raw.kind.slice(0, -4) : undefined;
  const apiVersion = typeof raw.apiVersion === 'string' ? raw.apiVersion : undefined;
  const items = (raw.items as unknown[]).map((item) => {
    if (typeof item !== 'object' || item === null) return item as T;
    const o = item as { kind?: unknown; apiVersion?: unknown };
    if (o.kind === undefined && kind !== undefined) o.kind = kind;
    if (o.apiVersion === undefined && apiVersion !== undefined) o.apiVersion = apiVersion;
    return o as T;
  });
  return {
    items,
    resourceVersion: typeof rv === 'string' ? rv : '',
    continue: typeof cont === 'string' && cont !== '' ? cont : undefined,
  };
}

/** A {@link KubeListWatch} for the collection at `path` of the kubeconfig's current cluster. */
export function createListerWatcher<T>(
  kc: ClusterAccess,
  path: string,
  opts: KubeListWatchOptions = {},
): ListerWatcher<T> {
  return new KubeListWatch<T>(kc, path, opts);
}
