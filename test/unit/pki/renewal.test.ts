import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createCertificateAuthority } from '../../../src/pki/certificate-authority.js';
import type { CertificateAuthority } from '../../../src/pki/certificate-authority.js';
import { issueCertificate, type IssuedCertificate } from '../../../src/pki/issue-certificate.js';
import { needsRenewal } from '../../../src/pki/renewal.js';

const DAY = 24 * 3600_000;
const WEEK = 7 * DAY;
const identity = { commonName: 'rt-1', dnsName: 'rt-1.example.com' };

/** A client certificate from `ca` naming `identity` (CN and DNS SAN). */
const runtimeLeaf = (ca: CertificateAuthority, validityMs?: number): Promise<IssuedCertificate> =>
  issueCertificate(ca, {
    commonName: identity.commonName,
    dnsNames: [identity.dnsName],
    usage: 'client',
    ...(validityMs === undefined ? {} : { validityMs }),
  });

describe('needsRenewal', () => {
  test('a current certificate of the CA naming the identity is kept', async () => {
    const ca = await createCertificateAuthority({ commonName: 'ca' });
    const leaf = await issueCertificate(ca, {
      commonName: 'rt-1',
      dnsNames: ['other.example.com', 'rt-1.example.com'],
      usage: 'client',
      validityMs: 30 * DAY,
    });
    assert.equal(needsRenewal(leaf.certPem, ca.certPem, new Date(), WEEK, identity), false);
    assert.equal(needsRenewal(leaf.certPem, ca.certPem, new Date(), WEEK), false);
    // A chain: its first certificate is the one judged.
    assert.equal(needsRenewal(`${leaf.certPem}${ca.certPem}`, ca.certPem, new Date(), WEEK, identity), false);
  });

  test('absent, garbage, or a CA that does not parse: issue', async () => {
    const ca = await createCertificateAuthority({ commonName: 'ca' });
    const leaf = await runtimeLeaf(ca);
    assert.equal(needsRenewal(undefined, ca.certPem, new Date(), WEEK), true);
    assert.equal(needsRenewal('', ca.certPem, new Date(), WEEK), true);
    assert.equal(
      needsRenewal(
        '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n',
        ca.certPem,
        new Date(),
        WEEK,
      ),
      true,
    );
    assert.equal(needsRenewal(leaf.certPem, 'not a CA', new Date(), WEEK), true);
  });

  test('inside the renew-before window or expired: issue', async () => {
    const ca = await createCertificateAuthority({ commonName: 'ca' });
    const leaf = await runtimeLeaf(ca, 10 * DAY);
    const now = Date.now();
    assert.equal(needsRenewal(leaf.certPem, ca.certPem, new Date(now + 2 * DAY), WEEK, identity), false);
    assert.equal(needsRenewal(leaf.certPem, ca.certPem, new Date(now + 4 * DAY), WEEK, identity), true);
    assert.equal(needsRenewal(leaf.certPem, ca.certPem, new Date(now + 11 * DAY), 0, identity), true);
  });

  test('another CA of the same name did not sign it: issue', async () => {
    const ca = await createCertificateAuthority({ commonName: 'ca' });
    const impostor = await createCertificateAuthority({ commonName: 'ca' });
    const leaf = await runtimeLeaf(impostor);
    assert.equal(needsRenewal(leaf.certPem, ca.certPem, new Date(), WEEK, identity), true);
    const other = await createCertificateAuthority({ commonName: 'another ca' });
    assert.equal(needsRenewal(leaf.certPem, other.certPem, new Date(), WEEK, identity), true);
    assert.equal(needsRenewal(leaf.certPem, impostor.certPem, new Date(), WEEK, identity), false);
  });

  test("the CA's certificate with a signature that does not verify: issue", async () => {
    const ca = await createCertificateAuthority({ commonName: 'ca' });
    const leaf = await runtimeLeaf(ca);
    // The last byte is the signature's: every name and key identifier still matches the CA.
    const der = Buffer.from(leaf.certPem.replace(/-----[^-]+-----/g, '').replace(/\s/g, ''), 'base64');
    der[der.length - 1] = (der[der.length - 1] ?? 0) ^ 0x01;
    const forged = `-----BEGIN CERTIFICATE-----\n${der.toString('base64')}\n-----END CERTIFICATE-----\n`;
    assert.equal(needsRenewal(forged, ca.certPem, new Date(), WEEK, identity), true);
  });

  test('a certificate of another identity: issue', async () => {
    const ca = await createCertificateAuthority({ commonName: 'ca' });
    const issue = (commonName: string, dnsNames: string[]): Promise<string> =>
      issueCertificate(ca, { commonName, dnsNames, usage: 'client' }).then((c) => c.certPem);
    const cases: [string, string[]][] = [
      ['rt-2', ['rt-1.example.com']], // another runtime's CN
      ['rt-10', ['rt-1.example.com']], // a CN the identity's is a prefix of
      ['rt', ['rt-1.example.com']],
      ['rt-1', ['rt-2.example.com']], // another domain
      ['rt-1', ['*.example.com']], // a wildcard is not the runtime's name
      ['rt-1', []], // no SAN
      ['rt-1.example.com', ['rt-1']], // CN and SAN swapped
    ];
    for (const [cn, dns] of cases)
      assert.equal(
        needsRenewal(await issue(cn, dns), ca.certPem, new Date(), WEEK, identity),
        true,
        `CN ${cn}, SAN ${dns.join(',')}`,
      );
  });
});
