import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createCertificateAuthority } from '../../../src/pki/certificate-authority.js';
import { PEM_FIELD_MAX_BLOCKS, PEM_FIELD_MAX_BYTES } from '../../../src/pki/pem-scan.js';
import { EventListenerError, parseCas } from '../../../src/drift/trusted-cas.js';

describe("the drift listener's trusted CAs", () => {
  test('every certificate of every text, in order', async () => {
    const a = await createCertificateAuthority({ commonName: 'trusted-a' });
    const b = await createCertificateAuthority({ commonName: 'trusted-b' });
    const cas = parseCas([`${a.certPem}${b.certPem}`, a.certPem]);
    assert.deepEqual(
      cas.map((c) => c.subject),
      ['CN=trusted-a', 'CN=trusted-b', 'CN=trusted-a'],
    );
  });

  test('1 MB of BEGIN lines, text over the limit, too many blocks: refused', async () => {
    const a = await createCertificateAuthority({ commonName: 'trusted-junk' });
    const junk = '-----BEGIN CERTIFICATE-----\n'.repeat(Math.ceil((1 << 20) / 28));
    assert.throws(() => parseCas([junk]), /larger than/);
    assert.throws(() => parseCas([junk.slice(0, PEM_FIELD_MAX_BYTES)]), /at least one trusted CA/);
    assert.throws(() => parseCas([`${a.certPem}${' '.repeat(PEM_FIELD_MAX_BYTES)}`]), EventListenerError);
    assert.throws(() => parseCas([a.certPem.repeat(PEM_FIELD_MAX_BLOCKS + 1)]), /more than 64 certificates/);
  });
});
