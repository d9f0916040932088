/**
 * An in-memory ListerWatcher whose lists are answered by a test function and whose
 * watches are driven step by step from the test. It is a unit-test double for the
 * reflector's logic, not a fake API server.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeStatus } from '../../../src/kube/kube-errors.js';
import type {
  ListOptions,
  ListResult,
  ListerWatcher,
  WatchEventCallback,
  WatchEventType,
  WatchOptions,
} from '../../../src/kube/lister-watcher.js';

/** One watch call, controlled by the test. */
export class WatchSession<T> {
  readonly done: Promise<void>;
  private settle!: { resolve: () => void; reject: (err: Error) => void };
  private ended = false;

  constructor(
    readonly opts: WatchOptions,
    private readonly onEvent: WatchEventCallback<T>,
    readonly signal: AbortSignal,
  ) {
    this.done = new Promise<void>((resolve, reject) => {
      this.settle = { resolve, reject };
    });
    // Like a real stream: an abort ends the request.
    signal.addEventListener(
      'abort',
      () => {
        this.end();
      },
      { once: true },
    );
  }

  emit(type: WatchEventType, obj: T | KubeStatus): void {
    if (this.ended || this.signal.aborted) throw new Error('emit on an ended watch');
    this.onEvent(type, obj);
  }

  /** The server closes the stream normally. */
  end(): void {
    if (this.ended) return;
    this.ended = true;
    this.settle.resolve();
  }

  /** The request fails. */
  fail(err: Error): void {
    if (this.ended) return;
    this.ended = true;
    this.settle.reject(err);
  }

  isEnded(): boolean {
    return this.ended;
  }
}

export type ListResponder<T> = (opts: ListOptions, call: number) => ListResult<T> | Promise<ListResult<T>>;

/** Scripted lists, recorded watches. */
export class ScriptedListerWatcher<T> implements ListerWatcher<T> {
  readonly listCalls: ListOptions[] = [];
  readonly watches: WatchSession<T>[] = [];
  /** Called for every watch as it starts, e.g. to fail it at once. */
  onWatch: ((s: WatchSession<T>) => void) | undefined;

  constructor(public respond: ListResponder<T>) {}

  async list(opts: ListOptions, signal: AbortSignal): Promise<ListResult<T>> {
    this.listCalls.push(opts);
    await Promise.resolve();
    signal.throwIfAborted();
    // Like a real request, a pending list ends when its signal aborts.
    let onAbort!: () => void;
    const aborted = new Promise<never>((_, reject) => {
      onAbort = () => {
        reject(new Error('list aborted', { cause: signal.reason }));
      };
      signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      return await Promise.race([this.respond(opts, this.listCalls.length), aborted]);
    } finally {
      signal.removeEventListener('abort', onAbort);
    }
  }

  watch(opts: WatchOptions, onEvent: WatchEventCallback<T>, signal: AbortSignal): Promise<void> {
    const s = new WatchSession(opts, onEvent, signal);
    this.watches.push(s);
    this.onWatch?.(s);
    return s.done;
  }

  /** The `n`-th watch (0-based), once it has started. */
  async watchNo(n: number, timeoutMs = 5_000): Promise<WatchSession<T>> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const s = this.watches[n];
      if (s !== undefined) return s;
      if (Date.now() > deadline)
        throw new Error(`watch #${n} did not start (${this.watches.length} started)`);
      await sleep(1);
    }
  }
}

/** A ConfigMap-like test object. */
export interface Obj {
  kind?: string;
  metadata: { name: string; namespace?: string; resourceVersion: string };
  data?: string;
}

export function obj(name: string, resourceVersion: string, data?: string, namespace = 'ns'): Obj {
  return { metadata: { name, namespace, resourceVersion }, data };
}

/** Polls until `cond` holds; generous so slow machines do not flake. */
export async function until(cond: () => boolean, what: string, timeoutMs = 5_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(1);
  }
}
