/**
 * Per-request options for client-node calls of the annotate mode:
 * - a timeout (client-node sets none, and a hung request would stall a worker forever);
 * - for patches, the Content-Type (client-node picks JSON Patch by default; we send merge patches);
 * - connection reuse: client-node builds a new https.Agent, hence a new TLS connection, for
 *   every request, which made signalling 1,000 Runtimes cost a TLS handshake each. The agent
 *   it built is swapped for a keep-alive agent with the same TLS options, shared per distinct
 *   options, so rotated credentials still get their own connections.
 */
import {
  Observable,
  type ConfigurationOptions,
  type RequestContext,
  type ResponseContext,
} from '@kubernetes/client-node';
import { KeepAliveAgents } from '../../kube/keep-alive-agents.js';

/** Default bound of one API request. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

const agents = new KeepAliveAgents({ maxAgents: 8 });

/** Options aborting the request after `timeoutMs`, optionally with a Content-Type. */
export function requestOptions(timeoutMs: number, contentType?: string): ConfigurationOptions {
  return {
    middleware: [
      {
        pre: (ctx: RequestContext) => {
          ctx.setSignal(AbortSignal.timeout(timeoutMs));
          if (contentType !== undefined) ctx.setHeaderParam('Content-Type', contentType);
          const agent = agents.replace(ctx.getAgent());
          if (agent !== undefined) ctx.setAgent(agent);
          return new Observable(Promise.resolve(ctx));
        },
        post: (res: ResponseContext) => new Observable(Promise.resolve(res)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
}
