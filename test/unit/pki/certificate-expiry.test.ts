import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { describe, test } from 'node:test';
import { earliestNotAfter, leafNotAfter } from '../../../src/pki/certificate-expiry.js';
import { createCertificateAuthority } from '../../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../../src/pki/issue-certificate.js';

const DAY = 24 * 3600_000;
const notAfter = (pem: string): number => Date.parse(new X509Certificate(pem).validTo);

describe('certificate expiry from PEM', () => {
  test("a chain's leaf, as text, a Buffer or the array a TLS context takes", async () => {
    const ca = await createCertificateAuthority({ commonName: 'ca', validityMs: 300 * DAY });
    const leaf = await issueCertificate(ca, { commonName: 'leaf', usage: 'server', validityMs: 9 * DAY });
    const chain = `${leaf.certPem}${ca.certPem}`;
    assert.equal(leafNotAfter(chain), notAfter(leaf.certPem));
    assert.equal(leafNotAfter(Buffer.from(chain)), notAfter(leaf.certPem));
    assert.equal(leafNotAfter([Buffer.from(leaf.certPem), ca.certPem]), notAfter(leaf.certPem));
    assert.equal(leafNotAfter(undefined), undefined);
    assert.equal(leafNotAfter('not a certificate'), undefined);
  });

  test('the earliest of a bundle', async () => {
    const a = await createCertificateAuthority({ commonName: 'a', validityMs: 300 * DAY });
    const b = await createCertificateAuthority({ commonName: 'b', validityMs: 3 * DAY });
    assert.equal(earliestNotAfter(`${a.certPem}${b.certPem}`), notAfter(b.certPem));
    assert.equal(earliestNotAfter(''), undefined);
  });
});
