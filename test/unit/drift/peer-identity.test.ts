import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import { describe, test } from 'node:test';
import type { PeerCertificate } from 'node:tls';
import { createCertificateAuthority } from '../../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../../src/pki/issue-certificate.js';
import {
  issuedByOneOf,
  parseDnsNames,
  peerIdentityOf,
  verifyPeer,
  type PeerIdentity,
} from '../../../src/drift/peer-identity.js';

const runtimes = new Map([['rt-1', { domain: 'rt-1.kyma.example' }]]);
const lookup = (id: string) => runtimes.get(id);
const identity = (commonName: string | undefined, ...dnsNames: string[]): PeerIdentity => ({
  commonName,
  dnsNames,
});

describe('peer identity and SAN pinning', () => {
  test('DNS names are read from real certificates, quoted values included', async () => {
    const ca = await createCertificateAuthority({ commonName: 'test-ca' });
    const cert = await issueCertificate(ca, {
      commonName: 'rt-1',
      dnsNames: ['a.example', 'evil.example, DNS:rt-1.kyma.example', 'q"x'],
      ipAddresses: ['127.0.0.1'],
      usage: 'client',
    });
    const san = new X509Certificate(cert.certPem).subjectAltName;
    // A crafted SAN must not smuggle in a second DNS entry.
    assert.deepEqual(parseDnsNames(san), ['a.example', 'evil.example, DNS:rt-1.kyma.example', 'q"x']);
    assert.deepEqual(parseDnsNames(undefined), []);
    assert.deepEqual(parseDnsNames('IP Address:10.0.0.1, URI:spiffe://x'), []);
  });

  test('the CN is the runtime ID; several CNs name no one', () => {
    const cert = (CN: unknown): PeerCertificate =>
      ({ subject: { CN }, subjectaltname: 'DNS:rt-1.kyma.example' }) as unknown as PeerCertificate;
    assert.deepEqual(peerIdentityOf(cert('rt-1')), identity('rt-1', 'rt-1.kyma.example'));
    assert.equal(peerIdentityOf(cert(['rt-1', 'rt-2'])).commonName, undefined);
    assert.equal(peerIdentityOf(cert('')).commonName, undefined);
    assert.equal(peerIdentityOf({} as PeerCertificate).commonName, undefined);
  });

  test('verification truth table', () => {
    const cases: [PeerIdentity, string][] = [
      [identity('rt-1', 'rt-1.kyma.example'), 'ok'],
      [identity('rt-1', 'other.example', 'rt-1.kyma.example'), 'ok'],
      [identity('rt-1', 'RT-1.Kyma.Example.'), 'ok'],
      [identity('rt-2', 'rt-1.kyma.example'), 'unknown_runtime'],
      [identity(undefined, 'rt-1.kyma.example'), 'unknown_runtime'],
      [identity('rt-1', 'rt-2.kyma.example'), 'san_mismatch'],
      [identity('rt-1'), 'san_mismatch'],
      [identity('rt-1', '*.kyma.example'), 'san_mismatch'],
      [identity('rt-1', 'x.rt-1.kyma.example'), 'san_mismatch'],
    ];
    for (const [id, want] of cases) {
      const verdict = verifyPeer(id, lookup);
      assert.equal(verdict.ok ? 'ok' : verdict.reason, want, JSON.stringify(id));
      if (verdict.ok) assert.equal(verdict.runtimeId, 'rt-1');
    }
    assert.equal(verifyPeer(identity('rt-1', ''), () => ({ domain: '' })).ok, false, 'no domain known');
  });

  test('issuedByOneOf recognises the issuing CA only', async () => {
    const [a, b] = await Promise.all([
      createCertificateAuthority({ commonName: 'ca-a' }),
      createCertificateAuthority({ commonName: 'ca-b' }),
    ]);
    const leaf = new X509Certificate(
      (await issueCertificate(a, { commonName: 'rt-1', usage: 'client' })).certPem,
    );
    const caA = new X509Certificate(a.certPem);
    const caB = new X509Certificate(b.certPem);
    assert.equal(issuedByOneOf(leaf, [caB, caA]), true);
    assert.equal(issuedByOneOf(leaf, [caB]), false);
    assert.equal(issuedByOneOf(leaf, []), false);
  });
});
