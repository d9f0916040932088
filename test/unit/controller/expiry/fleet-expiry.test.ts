import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import type { BootstrapperState } from '../../../../src/api/runtime-bootstrapper.js';
import {
  attachFleetExpiryMetrics,
  summarizeDriftCertificates,
  type FleetExpirySource,
  type FleetRuntime,
} from '../../../../src/controller/expiry/fleet-expiry.js';
import { NotReadyClock } from '../../../../src/controller/expiry/not-ready-clock.js';
import { leafNotAfter } from '../../../../src/pki/certificate-expiry.js';
import { createCertificateAuthority } from '../../../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../../../src/pki/issue-certificate.js';

const DAY = 24 * 3600_000;
const NOW = Date.parse('2030-01-01T00:00:00Z');

/** Samples of `name` on `registry` as label text → value. */
async function samples(registry: Registry, name: string): Promise<Map<string, number>> {
  const metric = registry.getSingleMetric(name);
  if (!metric) return new Map();
  const got = await metric.get();
  return new Map(got.values.map((v) => [JSON.stringify(v.labels), v.value]));
}

const runtime = (
  id: string,
  state: BootstrapperState,
  driftNotAfter?: number,
  admissionPath: FleetRuntime['admissionPath'] = 'webhook',
): FleetRuntime => ({
  key: `kcp-system/${id}`,
  runtimeId: id,
  state,
  driftNotAfter,
  admissionPath,
});

describe('fleet expiry metrics', () => {
  test('per state: the earliest drift client certificate and how many expire within 14 days', () => {
    const s = summarizeDriftCertificates(
      [
        runtime('a', 'Ready', NOW + 40 * DAY),
        runtime('b', 'Ready', NOW + 10 * DAY),
        runtime('c', 'Ready', NOW + 14 * DAY),
        runtime('d', 'Error', NOW + 2 * DAY),
        runtime('e', 'Pending'),
      ],
      NOW,
    );
    assert.deepEqual(
      [...s.earliest],
      [
        ['Ready', NOW + 10 * DAY],
        ['Error', NOW + 2 * DAY],
      ],
    );
    assert.deepEqual(
      [...s.expiringSoon],
      [
        ['Ready', 2],
        ['Error', 1],
      ],
    );
  });

  test("the values are the certificates' notAfter, in Unix seconds; per-runtime series only when asked", async () => {
    const ca = await createCertificateAuthority({ commonName: 'kcp ca', validityMs: 400 * DAY });
    const issue = async (days: number): Promise<string> =>
      (await issueCertificate(ca, { commonName: 'x', usage: 'client', validityMs: days * DAY })).certPem;
    const listener = await issue(90);
    const clientA = await issue(30);
    const clientB = await issue(5);
    const runtimes = [
      runtime('rt-a', 'Ready', leafNotAfter(clientA)),
      runtime('rt-b', 'Error', leafNotAfter(clientB)),
    ];
    const source: FleetExpirySource = {
      caNotAfter: () => ca.certificate.notAfter.getTime(),
      listenerNotAfter: () => leafNotAfter(listener),
      runtimes: () => runtimes,
    };
    const registry = new Registry();
    attachFleetExpiryMetrics(registry, source, { perRuntime: false });
    const notAfter = (pem: string): number => Date.parse(new X509Certificate(pem).validTo) / 1000;
    assert.deepEqual(
      await samples(registry, 'rtb_kcp_ca_expiration_timestamp_seconds'),
      new Map([['{}', notAfter(ca.certPem)]]),
    );
    assert.deepEqual(
      await samples(registry, 'rtb_drift_listener_certificate_expiration_timestamp_seconds'),
      new Map([['{}', notAfter(listener)]]),
    );
    assert.deepEqual(
      await samples(registry, 'rtb_drift_client_certificate_expiration_timestamp_seconds'),
      new Map([
        ['{"state":"Ready"}', notAfter(clientA)],
        ['{"state":"Error"}', notAfter(clientB)],
      ]),
    );
    assert.equal(
      registry.getSingleMetric('rtb_runtime_state'),
      undefined,
      'no per-runtime metric unless asked',
    );

    const optIn = new Registry();
    attachFleetExpiryMetrics(optIn, source, { perRuntime: true });
    assert.deepEqual(
      await samples(optIn, 'rtb_runtime_state'),
      new Map([
        ['{"runtime_id":"rt-a","state":"Ready"}', 1],
        ['{"runtime_id":"rt-b","state":"Error"}', 1],
      ]),
    );
    assert.deepEqual(
      await samples(optIn, 'rtb_runtime_drift_client_certificate_expiration_timestamp_seconds'),
      new Map([
        ['{"runtime_id":"rt-a"}', notAfter(clientA)],
        ['{"runtime_id":"rt-b"}', notAfter(clientB)],
      ]),
    );
  });

  test('the runtimes by admission path: both paths always present, counted from the status', async () => {
    const runtimes = [
      runtime('rt-a', 'Ready', undefined, 'policy'),
      runtime('rt-b', 'Ready', undefined, 'webhook'),
      runtime('rt-c', 'Error', undefined, 'policy'),
    ];
    const registry = new Registry();
    attachFleetExpiryMetrics(
      registry,
      { caNotAfter: () => undefined, listenerNotAfter: () => undefined, runtimes: () => runtimes },
      { perRuntime: false },
    );
    assert.deepEqual(
      await samples(registry, 'rtb_runtimes_admission_path'),
      new Map([
        ['{"path":"policy"}', 2],
        ['{"path":"webhook"}', 1],
      ]),
    );
    runtimes.length = 0;
    assert.deepEqual(
      await samples(registry, 'rtb_runtimes_admission_path'),
      new Map([
        ['{"path":"policy"}', 0],
        ['{"path":"webhook"}', 0],
      ]),
    );
  });

  test('a detached source leaves no samples, and a new term attaches to the same gauges', async () => {
    const registry = new Registry();
    const source = (at: number): FleetExpirySource => ({
      caNotAfter: () => at,
      listenerNotAfter: () => undefined,
      runtimes: () => [],
    });
    const detach = attachFleetExpiryMetrics(registry, source(NOW), { perRuntime: false });
    detach();
    assert.deepEqual(await samples(registry, 'rtb_kcp_ca_expiration_timestamp_seconds'), new Map());
    attachFleetExpiryMetrics(registry, source(NOW + DAY), { perRuntime: false });
    assert.deepEqual(
      await samples(registry, 'rtb_kcp_ca_expiration_timestamp_seconds'),
      new Map([['{}', (NOW + DAY) / 1000]]),
    );
  });

  test('not Ready since: the first time this process saw each runtime not Ready; Paused does not count', () => {
    const clock = new NotReadyClock();
    assert.equal(clock.observe([runtime('a', 'Ready'), runtime('p', 'Paused')], NOW), undefined);
    assert.equal(clock.observe([runtime('a', 'Error')], NOW + 1000), NOW + 1000);
    assert.equal(clock.observe([runtime('a', 'Installing'), runtime('b', 'Error')], NOW + 5000), NOW + 1000);
    assert.equal(clock.observe([runtime('a', 'Ready'), runtime('b', 'Error')], NOW + 9000), NOW + 5000);
    assert.equal(clock.observe([runtime('a', 'Error'), runtime('b', 'Ready')], NOW + 12_000), NOW + 12_000);
  });
});
