import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { createCertificateAuthority } from '../../../src/pki/certificate-authority.js';
import { certificateFromPem } from '../../../src/pki/certificate-from-pem.js';
import { fromPem, PkiError } from '../../../src/pki/crypto-provider.js';
import { parseCertificates, parsePrivateKey } from '../../../src/pki/pem-certificates.js';
import {
  findPemBlocks,
  firstPemDer,
  PEM_FIELD_MAX_BLOCKS,
  PEM_FIELD_MAX_BYTES,
  scanPemStrict,
} from '../../../src/pki/pem-scan.js';

const BEGIN = '-----BEGIN CERTIFICATE-----';
const END = '-----END CERTIFICATE-----';
/** The pattern the scanner replaces (quadratic on many BEGIN lines): the reference on small inputs. */
const LAZY = /-----BEGIN CERTIFICATE-----[\s\S]*?-----END CERTIFICATE-----/g;
/** About 1 MB of BEGIN lines and nothing else. */
const JUNK = `${BEGIN}\n`.repeat(Math.ceil((1 << 20) / (BEGIN.length + 1)));

describe('PEM scanning in linear time', () => {
  test('finds the blocks the lazy pattern finds, and the same text outside them', () => {
    const piece = fc.constantFrom(BEGIN, END, '\n', ' ', 'AAAA', 'x', '-----BEGIN KEY-----', '-----');
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 24 }), (pieces) => {
        const text = pieces.join('');
        const found = findPemBlocks(text, 'CERTIFICATE');
        assert.deepEqual(
          found.blocks.map((b) => b.text),
          text.match(LAZY) ?? [],
        );
        assert.equal(found.outside, text.replace(LAZY, '').trim() !== '');
        assert.equal(found.truncated, false);
      }),
      { numRuns: 2000 },
    );
  });

  test('1 MB of BEGIN lines: no block, all of it outside', () => {
    const found = findPemBlocks(JUNK, 'CERTIFICATE');
    assert.equal(found.blocks.length, 0);
    assert.equal(found.outside, true);
    const strict = scanPemStrict(JUNK);
    assert.deepEqual(strict, { ok: false, problem: 'PEM block 1 (CERTIFICATE) has no END line of its own' });
  });

  test('stops at maxBlocks and says so', () => {
    const text = `${BEGIN}\nAA\n${END}\n`.repeat(5);
    const found = findPemBlocks(text, 'CERTIFICATE', 3);
    assert.equal(found.blocks.length, 3);
    assert.equal(found.truncated, true);
    assert.deepEqual(scanPemStrict(text, 3), { ok: false, problem: 'more than 3 PEM blocks' });
  });

  test('strict: every boundary line pairs up; comments between blocks are fine', () => {
    const block = `${BEGIN}\nAAAA\n${END}\n`;
    const ok = scanPemStrict(`# a comment\n=====\n${block}----- a rule -----\n${block}`);
    assert.equal(ok.ok && ok.blocks.length, 2);
    const key = `-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n`;
    const mixed = scanPemStrict(block + key);
    assert.deepEqual(mixed.ok && mixed.blocks.map((b) => b.label), ['CERTIFICATE', 'PRIVATE KEY']);
    const cases: [string, RegExp][] = [
      [`${END}\n${block}`, /an END line without BEGIN before block 1/],
      [`${block}${BEGIN}\nAA\n${BEGIN}\nAA\n${END}\n`, /block 2 \(CERTIFICATE\) has no END line of its own/],
      [`${BEGIN}\nAA\n-----END PRIVATE KEY-----\n`, /block 1 \(CERTIFICATE\) has no END line/],
      [`-----BEGIN ${'X'.repeat(100)}-----\n`, /block 1 has a malformed BEGIN line/],
      ['-----BEGIN certificate-----\nAA\n-----END certificate-----', /block 1 has a malformed BEGIN line/],
      [`-----BEGIN ${'A'.repeat(1 << 20)}`, /block 1 has a malformed BEGIN line/],
    ];
    for (const [text, problem] of cases) {
      const scan = scanPemStrict(text);
      assert.match(scan.ok ? 'accepted' : scan.problem, problem, text.slice(0, 80));
    }
  });

  test('firstPemDer reads the first block of a label; nothing over the size limit', () => {
    const der = firstPemDer(`junk\n${BEGIN}\nAQID\n${END}\n${BEGIN}\nBAUG\n${END}`, 'CERTIFICATE');
    assert.deepEqual(der && [...der], [1, 2, 3]);
    assert.equal(firstPemDer(JUNK, 'CERTIFICATE'), undefined);
    assert.equal(
      firstPemDer(`${BEGIN}\nAQID\n${END}\n${' '.repeat(PEM_FIELD_MAX_BYTES)}`, 'CERTIFICATE'),
      undefined,
    );
  });
});

describe('certificates and keys from hostile text', () => {
  test('parseCertificates: 1 MB of junk, or junk beside a certificate, is garbage', async () => {
    const ca = await createCertificateAuthority({ commonName: 'pem-scan-test' });
    assert.deepEqual(parseCertificates(JUNK), { certificates: [], garbage: true });
    // Under the size limit, the scan itself decides.
    const under = JUNK.slice(0, PEM_FIELD_MAX_BYTES - ca.certPem.length - 1);
    const mixed = parseCertificates(`${ca.certPem}\n${under}`);
    assert.equal(mixed.certificates.length, 1);
    assert.equal(mixed.garbage, true);
    const clean = parseCertificates(`${ca.certPem}\n${ca.certPem}`);
    assert.equal(clean.certificates.length, 2);
    assert.equal(clean.garbage, false);
    // Over the size limit nothing is read, not even a good certificate at the start.
    assert.deepEqual(parseCertificates(`${ca.certPem}${' '.repeat(PEM_FIELD_MAX_BYTES)}`), {
      certificates: [],
      garbage: true,
    });
  });

  test('parseCertificates parses at most PEM_FIELD_MAX_BLOCKS blocks', async () => {
    const ca = await createCertificateAuthority({ commonName: 'pem-scan-many' });
    const many = parseCertificates(ca.certPem.repeat(PEM_FIELD_MAX_BLOCKS + 1));
    assert.equal(many.certificates.length, PEM_FIELD_MAX_BLOCKS);
    assert.equal(many.garbage, true);
  });

  test('keys: junk and oversized text read as absent; fromPem finds no block in junk', async () => {
    const ca = await createCertificateAuthority({ commonName: 'pem-scan-key' });
    assert.notEqual(parsePrivateKey(ca.keyPem), undefined);
    assert.equal(parsePrivateKey(`${ca.keyPem}${' '.repeat(PEM_FIELD_MAX_BYTES)}`), undefined);
    const keyJunk = '-----BEGIN PRIVATE KEY-----\n'.repeat(40_000);
    assert.equal(parsePrivateKey(keyJunk.slice(0, PEM_FIELD_MAX_BYTES)), undefined);
    assert.throws(() => fromPem(keyJunk.slice(0, PEM_FIELD_MAX_BYTES), 'PRIVATE KEY'), PkiError);
    assert.equal(fromPem(ca.keyPem, 'PRIVATE KEY').byteLength > 0, true);
  });

  test("certificateFromPem never hands text to @peculiar/x509's PEM reader", async () => {
    const ca = await createCertificateAuthority({ commonName: 'pem-scan-peculiar' });
    assert.equal(certificateFromPem(ca.certPem).subject, 'CN=pem-scan-peculiar');
    // Header-like lines after a BEGIN line: the library's pattern backtracks exponentially on
    // these (40 lines would take hours); here they are a block that does not parse.
    const headers = `${BEGIN}\na: b\n${' a: b\n'.repeat(40)}!`;
    assert.throws(() => certificateFromPem(headers), PkiError);
    assert.throws(() => certificateFromPem(`${headers}\n${END}\n`), PkiError);
    assert.throws(() => certificateFromPem(JUNK), PkiError);
  });
});
