/**
 * Per-request options for client-node calls of the annotate mode: a timeout (client-node sets
 * none, and a hung request would stall a worker forever) and, for patches, the Content-Type
 * (client-node picks JSON Patch by default; we send JSON merge patches).
 */
import {
  Observable,
  type ConfigurationOptions,
  type RequestContext,
  type ResponseContext,
} from '@kubernetes/client-node';

/** Default bound of one API request. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

/** Options aborting the request after `timeoutMs`, optionally with a Content-Type. */
export function requestOptions(timeoutMs: number, contentType?: string): ConfigurationOptions {
  return {
    middleware: [
      {
        pre: (ctx: RequestContext) => {
          ctx.setSignal(AbortSignal.timeout(timeoutMs));
          if (contentType !== undefined) ctx.setHeaderParam('Content-Type', contentType);
          return new Observable(Promise.resolve(ctx));
        },
        post: (res: ResponseContext) => new Observable(Promise.resolve(res)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
}
