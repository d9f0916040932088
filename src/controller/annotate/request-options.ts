/**
 * Per-request options for client-node calls of the annotate mode:
 * - a timeout (client-node sets none, and a hung request would stall a worker forever);
 * - for patches, the Content-Type (client-node picks JSON Patch by default; we send merge patches);
 * - connection reuse: client-node builds a new https.Agent, hence a new TLS connection, for
 *   every request, which made signalling 1,000 Runtimes cost a TLS handshake each. The agent
 *   it built is swapped for a keep-alive agent with the same TLS options, shared per distinct
 *   options, so rotated credentials still get their own connections.
 */
import { createHash } from 'node:crypto';
import https from 'node:https';
import {
  Observable,
  type ConfigurationOptions,
  type RequestContext,
  type ResponseContext,
} from '@kubernetes/client-node';

/** Default bound of one API request. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

const MAX_AGENTS = 8;
const agents = new Map<string, https.Agent>();

/** A keep-alive agent with the TLS options of `agent`, or `agent` itself if it is not plain https. */
function sharedAgent(agent: unknown): unknown {
  if (!(agent instanceof https.Agent) || agent.constructor !== https.Agent) return agent; // proxies etc.
  const o = agent.options;
  const fingerprint = createHash('sha256')
    .update(JSON.stringify([o.ca, o.cert, o.key, o.pfx, o.passphrase, o.servername, o.rejectUnauthorized]))
    .digest('hex');
  let shared = agents.get(fingerprint);
  if (shared === undefined) {
    if (agents.size >= MAX_AGENTS) {
      const oldest = agents.keys().next();
      if (oldest.done !== true) {
        agents.get(oldest.value)?.destroy();
        agents.delete(oldest.value);
      }
    }
    shared = new https.Agent({ ...o, keepAlive: true, maxSockets: 64 });
    agents.set(fingerprint, shared);
  }
  return shared;
}

/** Options aborting the request after `timeoutMs`, optionally with a Content-Type. */
export function requestOptions(timeoutMs: number, contentType?: string): ConfigurationOptions {
  return {
    middleware: [
      {
        pre: (ctx: RequestContext) => {
          ctx.setSignal(AbortSignal.timeout(timeoutMs));
          if (contentType !== undefined) ctx.setHeaderParam('Content-Type', contentType);
          ctx.setAgent(sharedAgent(ctx.getAgent()) as https.Agent);
          return new Observable(Promise.resolve(ctx));
        },
        post: (res: ResponseContext) => new Observable(Promise.resolve(res)),
      },
    ],
    middlewareMergeStrategy: 'append',
  };
}
