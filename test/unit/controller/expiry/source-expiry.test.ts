import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import type { ClusterTrustBundle } from '../../../../src/api/cluster-trust-bundle.js';
import type { SourceSnapshot } from '../../../../src/controller/sources/source-watcher.js';
import {
  attachSourceExpiryMetrics,
  lastChange,
  trustBundleNotAfter,
} from '../../../../src/controller/expiry/source-expiry.js';
import { createCertificateAuthority } from '../../../../src/pki/certificate-authority.js';

const DAY = 24 * 3600_000;
const notAfter = (pem: string): number => Date.parse(new X509Certificate(pem).validTo);

const bundle = (pems: string[]): ClusterTrustBundle => ({
  apiVersion: 'certificates.k8s.io/v1beta1',
  kind: 'ClusterTrustBundle',
  metadata: { name: 'b' },
  spec: { trustBundle: pems.join('\n') },
});

async function value(registry: Registry, name: string): Promise<number | undefined> {
  return (await registry.getSingleMetric(name)?.get())?.values[0]?.value;
}

describe('source expiry metrics', () => {
  test("the trust bundle's expiry is its earliest certificate's notAfter, whatever the order", async () => {
    const long = await createCertificateAuthority({ commonName: 'long', validityMs: 900 * DAY });
    const short = await createCertificateAuthority({ commonName: 'short', validityMs: 20 * DAY });
    assert.equal(trustBundleNotAfter(bundle([long.certPem, short.certPem])), notAfter(short.certPem));
    assert.equal(trustBundleNotAfter(bundle([short.certPem, long.certPem])), notAfter(short.certPem));
    assert.equal(trustBundleNotAfter(bundle(['garbage'])), undefined);
    assert.equal(trustBundleNotAfter(undefined), undefined);
  });

  test("the pull Secret's last change: its latest managedFields time, else its creation", () => {
    const created = '2030-01-01T00:00:00Z';
    assert.equal(lastChange({ creationTimestamp: new Date(created) }), Date.parse(created));
    assert.equal(
      lastChange({
        creationTimestamp: new Date(created),
        managedFields: [
          { manager: 'kim', operation: 'Apply', time: new Date('2030-02-01T00:00:00Z') },
          // As a raw watch event carries it: a string.
          { manager: 'kubectl', operation: 'Update', time: '2030-03-01T10:00:00Z' as unknown as Date },
        ],
      }),
      Date.parse('2030-03-01T10:00:00Z'),
    );
    assert.equal(lastChange(undefined), undefined);
  });

  test('scraped from the snapshot in Unix seconds; nothing while a source is missing', async () => {
    const ca = await createCertificateAuthority({ commonName: 'landscape', validityMs: 30 * DAY });
    let snapshot: SourceSnapshot = { versions: {}, version: 'v', problems: [] };
    const registry = new Registry();
    const detach = attachSourceExpiryMetrics(registry, () => snapshot);
    assert.equal(await value(registry, 'rtb_trust_bundle_expiration_timestamp_seconds'), undefined);
    assert.equal(await value(registry, 'rtb_pull_secret_last_change_timestamp_seconds'), undefined);
    snapshot = {
      ...snapshot,
      clusterTrustBundle: bundle([ca.certPem]),
      pullSecret: { metadata: { name: 'p', creationTimestamp: new Date('2030-01-01T00:00:00Z') } },
    };
    assert.equal(
      await value(registry, 'rtb_trust_bundle_expiration_timestamp_seconds'),
      notAfter(ca.certPem) / 1000,
    );
    assert.equal(
      await value(registry, 'rtb_pull_secret_last_change_timestamp_seconds'),
      Date.parse('2030-01-01T00:00:00Z') / 1000,
    );
    detach();
    assert.equal(await value(registry, 'rtb_trust_bundle_expiration_timestamp_seconds'), undefined);
  });
});
