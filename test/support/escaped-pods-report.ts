import type { EscapedPodsReport } from '../../src/api/escaped-pods.js';

/**
 * A webhook's escaped-Pod report as its status ConfigMap carries it: three escaped Pods (one bare)
 * of 40 scanned, repair off; `over` replaces members.
 */
export const escapedPodsReport = (over: Partial<EscapedPodsReport> = {}): EscapedPodsReport => ({
  pods: 3,
  reasons: { unstamped: 3, registry: 2 },
  bare: 1,
  scanned: 40,
  repair: false,
  restarted: 0,
  revision: 'v1',
  at: '2026-01-01T00:00:00.000Z',
  ...over,
});
