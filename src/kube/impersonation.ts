import type http from 'node:http';
import type https from 'node:https';
import type { ClusterAccess } from './cluster-access.js';

/**
 * `access` acting as `user`: every request carries `Impersonate-User`, so the API server
 * authorizes and admits it as that user, whatever `access` itself may do. A user named
 * `system:serviceaccount:<ns>:<name>` gets that ServiceAccount's groups from the API server.
 * The connection and credentials stay those of `access` (its holder needs the `impersonate` verb).
 */
export function impersonating(access: ClusterAccess, user: string): ClusterAccess {
  return {
    getCurrentCluster: () => access.getCurrentCluster(),
    applyToHTTPSOptions: async (opts: https.RequestOptions): Promise<void> => {
      await access.applyToHTTPSOptions(opts);
      // An impersonation in `access`'s kubeconfig (its user, groups, extras) is replaced whole.
      const kept = Object.entries((opts.headers ?? {}) as http.OutgoingHttpHeaders).filter(
        ([name]) => !name.toLowerCase().startsWith('impersonate-'),
      );
      opts.headers = { ...Object.fromEntries(kept), 'Impersonate-User': user };
    },
    requestLimits: access.requestLimits,
  };
}
