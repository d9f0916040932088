/**
 * Expiry metrics of the landscape's sources on the KCP, computed at each scrape from the source
 * watcher's snapshot (every mode watches the sources): the earliest notAfter in the
 * ClusterTrustBundle (a bundle whose CAs expire is a landscape outage) and when the pull Secret
 * last changed (credentials age).
 */
import type { V1ObjectMeta } from '@kubernetes/client-node';
import type { Registry } from 'prom-client';
import type { ClusterTrustBundle } from '../../api/cluster-trust-bundle.js';
import { earliestNotAfter } from '../../pki/certificate-expiry.js';
import { ScrapeSlot, scrapedGauge } from '../../telemetry/scraped-gauge.js';
import type { SourceSnapshot } from '../sources/source-watcher.js';
import { PULL_SECRET_LAST_CHANGE, TRUST_BUNDLE_EXPIRY } from './expiry-metric-specs.js';

/** The earliest notAfter (epoch ms) of the bundle's certificates; undefined without any. */
export function trustBundleNotAfter(bundle: ClusterTrustBundle | undefined): number | undefined {
  return earliestNotAfter(bundle?.spec.trustBundle);
}

/**
 * When an object was last written (epoch ms): the latest time of its managedFields (the API
 * server moves a manager's time when it changes a value), else its creation.
 */
export function lastChange(meta: V1ObjectMeta | undefined): number | undefined {
  let latest: number | undefined;
  const consider = (t: Date | string | undefined): void => {
    const ms = t === undefined ? NaN : new Date(t).getTime();
    if (Number.isFinite(ms) && (latest === undefined || ms > latest)) latest = ms;
  };
  consider(meta?.creationTimestamp);
  for (const f of meta?.managedFields ?? []) consider(f.time);
  return latest;
}

/** Attaches the sources' snapshot to the metrics on `registry` (registered on first use); returns the detach. */
export function attachSourceExpiryMetrics(registry: Registry, snapshot: () => SourceSnapshot): () => void {
  const slot = ScrapeSlot.of<() => SourceSnapshot>(registry, 'source-expiry', (s) => {
    scrapedGauge(registry, TRUST_BUNDLE_EXPIRY, (g) => {
      const at = trustBundleNotAfter(s.current()?.().clusterTrustBundle);
      if (at !== undefined) g.set(at / 1000);
    });
    scrapedGauge(registry, PULL_SECRET_LAST_CHANGE, (g) => {
      const at = lastChange(s.current()?.().pullSecret?.metadata);
      if (at !== undefined) g.set(at / 1000);
    });
  });
  return slot.attach(snapshot);
}
