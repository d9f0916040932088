/**
 * The runtime's customers' registry caches in its RuntimeBootstrapper's status (pure): condition
 * `RegistryCache`. The report is the runtime's word about itself alone (DESIGN §14): read bounded
 * (../../api/registry-caches.ts), its hosts named in the message, never compared with other runtimes.
 */
import type { RegistryCachesReport } from '../../api/registry-caches.js';
import type { WebhookStatusReport } from '../../api/webhook-status.js';
import type { StatusBuilder } from './status-builder.js';

/** The condition's type. */
export const REGISTRY_CACHE_CONDITION = 'RegistryCache';

/** The most characters of the hosts a message names (the report holds at most 32 of each list). */
const HOSTS_MAX_CHARS = 1024;

/** `a, b, c` cut at {@link HOSTS_MAX_CHARS}, with how many more there are. */
function named(hosts: readonly string[], more = 0): string {
  let text = '';
  let shown = 0;
  for (const host of hosts) {
    const next = text === '' ? host : `${text}, ${host}`;
    if (next.length > HOSTS_MAX_CHARS) break;
    text = next;
    shown++;
  }
  const rest = hosts.length - shown + more;
  return rest > 0 ? `${text} and ${rest} more` : text;
}

/** The condition a report gives (pure): its status, reason and message. */
export function registryCacheCondition(r: RegistryCachesReport): {
  status: 'True' | 'False';
  reason: string;
  message: string;
} {
  if (r.rewritten.length > 0) {
    const hosts = named(r.rewritten);
    return r.mode === 'leave'
      ? {
          status: 'True',
          reason: 'LeftToCache',
          message: `${hosts}: a customer's registry cache on this runtime serves them, so their images are not rewritten here (config registryCaches: leave)`,
        }
      : {
          status: 'True',
          reason: 'Bypassed',
          message: `${hosts}: a customer's registry cache on this runtime serves them, but the overrides rewrite their images, so Pods pull from the overrides' targets and bypass the cache (config registryCaches: leave would leave them to the cache)`,
        };
  }
  if (r.hosts.length === 0 && r.more === 0)
    return {
      status: 'False',
      reason: 'NoCaches',
      message: `no customer's registry cache is ready on this runtime (RegistryCacheConfig: ${r.api})`,
    };
  return {
    status: 'False',
    reason: 'NotRewritten',
    message: `the overrides rewrite none of the hosts with a customer's registry cache on this runtime (${named(r.hosts, r.more)})`,
  };
}

/** Records the report's finding as condition `RegistryCache`; a report without one drops it. */
export function recordRegistryCaches(status: StatusBuilder, report: WebhookStatusReport): void {
  const r = report.registryCaches;
  if (r === undefined) {
    status.dropCondition(REGISTRY_CACHE_CONDITION);
    return;
  }
  const c = registryCacheCondition(r);
  status.condition(REGISTRY_CACHE_CONDITION, c.status, c.reason, c.message);
}
