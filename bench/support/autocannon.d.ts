// The part of autocannon's programmatic API the load child uses (the package ships no types).
declare module 'autocannon' {
  import type { EventEmitter } from 'node:events';

  namespace autocannon {
    interface Options {
      url: string;
      method?: 'GET' | 'POST' | 'PUT' | 'DELETE';
      headers?: Record<string, string>;
      body?: string | Buffer;
      connections?: number;
      pipelining?: number;
      /** Seconds. */
      duration?: number;
      timeout?: number;
      overallRate?: number;
      renderProgressBar?: boolean;
      renderResultsTable?: boolean;
      renderLatencyTable?: boolean;
      /** Cycled per connection; `setupRequest` may rewrite each request before it is sent. */
      requests?: readonly RequestSpec[];
    }

    interface RawRequest {
      method?: string;
      path?: string;
      headers?: Record<string, string>;
      body?: string | Buffer;
    }

    interface RequestSpec extends RawRequest {
      setupRequest?: (request: RawRequest, context: Record<string, unknown>) => RawRequest;
    }

    interface Result {
      /** Seconds. */
      readonly duration: number;
      readonly errors: number;
      readonly timeouts: number;
      readonly non2xx: number;
      readonly mismatches: number;
      readonly '2xx': number;
      readonly requests: { readonly total: number; readonly average: number };
      readonly latency: { readonly p50: number; readonly p99: number; readonly average: number };
    }

    interface Instance extends EventEmitter, PromiseLike<Result> {
      on(
        event: 'response',
        listener: (client: unknown, statusCode: number, resBytes: number, responseTimeMs: number) => void,
      ): this;
      on(event: string, listener: (...args: unknown[]) => void): this;
    }
  }

  function autocannon(options: autocannon.Options): autocannon.Instance;
  export = autocannon;
}
