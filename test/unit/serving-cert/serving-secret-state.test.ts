// The facts the serving-secret plan decides on, read directly: what counts in ca.crt, ca.key,
// the caBundles, the annotations and the serving certificate, at the edges of each rule.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { CLOCK_SKEW_MS } from '../../../src/pki/clock-skew.js';
import { parseCertificate, type ParsedCertificate } from '../../../src/pki/pem-certificates.js';
import {
  CA_TRUSTED_SINCE_ANNOTATION,
  SERVING_SINCE_ANNOTATION,
} from '../../../src/serving-cert/serving-policy.js';
import {
  formatTrustedSince,
  lifeStart,
  readSecretFacts,
  type SecretFacts,
  type ServingSecretContent,
} from '../../../src/serving-cert/serving-secret-state.js';
import { DNS } from './serving-world.js';
import { caFrom, servingLeaf } from './serving-certs.js';

const DAY = 24 * 3600 * 1000;
const NOW = Date.parse('2026-03-01T00:00:00Z');

const caOne = await caFrom('one', NOW - DAY, 30 * DAY);
const caTwo = await caFrom('two', NOW - DAY, 60 * DAY);
const caGone = await caFrom('gone', NOW - 40 * DAY, 10 * DAY);
const leaf = await servingLeaf(caOne, NOW - DAY, 10 * DAY);
const narrowLeaf = await servingLeaf(caOne, NOW - DAY, 10 * DAY, [DNS[0] ?? 'x']);

const parsed = (pem: string): ParsedCertificate => {
  const c = parseCertificate(pem);
  assert.ok(c, 'a certificate');
  return c;
};
const one = parsed(caOne.certPem);
const two = parsed(caTwo.certPem);
const served = parsed(leaf.certPem);
const fpA = 'a'.repeat(64);
const fpB = 'b'.repeat(64);

function facts(
  secret: ServingSecretContent | undefined,
  bundles: readonly string[] = [],
  now = NOW,
): SecretFacts {
  return readSecretFacts(secret, bundles, DNS, [], now);
}
const fps = (cs: readonly ParsedCertificate[]): string[] => cs.map((c) => c.fingerprint);
const problem = (f: SecretFacts): string | undefined => (f.serving.ok ? undefined : f.serving.problem);

describe('readSecretFacts', () => {
  test('ca.crt: its unexpired CA certificates, each once, in order; anything else makes it untidy', () => {
    const tidy = facts({ caCrt: caOne.certPem + caTwo.certPem });
    assert.deepEqual(fps(tidy.cas), [one.fingerprint, two.fingerprint]);
    assert.equal(tidy.caCrtUntidy, false);
    for (const [what, caCrt] of [
      ['a duplicate', caOne.certPem + caTwo.certPem + caOne.certPem],
      ['an expired CA', caOne.certPem + caGone.certPem + caTwo.certPem],
      ['a serving certificate', caOne.certPem + leaf.certPem + caTwo.certPem],
      ['text outside the PEM blocks', `${caOne.certPem}junk\n${caTwo.certPem}`],
    ] as const) {
      const f = facts({ caCrt });
      assert.deepEqual(fps(f.cas), [one.fingerprint, two.fingerprint], what);
      assert.equal(f.caCrtUntidy, true, what);
    }
    assert.deepEqual(facts(undefined).cas, []);
    assert.equal(facts(undefined).caCrtUntidy, false);
  });

  test('a CA leaves the facts at the instant it expires', () => {
    assert.deepEqual(fps(facts({ caCrt: caOne.certPem }, [], one.notAfter - 1).cas), [one.fingerprint]);
    assert.deepEqual(facts({ caCrt: caOne.certPem }, [], one.notAfter).cas, []);
    assert.deepEqual(facts(undefined, [caOne.certPem], one.notAfter - 1).bundleCertificates.length, 1);
    assert.deepEqual(facts(undefined, [caOne.certPem], one.notAfter).bundleCertificates, []);
  });

  test('ca.key: the CA it belongs to, and whether there is one at all', () => {
    const keyed = facts({ caCrt: caOne.certPem + caTwo.certPem, caKey: caTwo.keyPem });
    assert.equal(keyed.hasCaKey, true);
    assert.ok(keyed.caKey);
    assert.equal(keyed.keyed?.fingerprint, two.fingerprint);
    const garbage = facts({ caCrt: caOne.certPem, caKey: 'not a key' });
    assert.equal(garbage.hasCaKey, true);
    assert.equal(garbage.caKey, undefined);
    assert.equal(garbage.keyed, undefined);
    const foreign = facts({ caCrt: caOne.certPem, caKey: caTwo.keyPem });
    assert.equal(foreign.keyed, undefined, 'a key of no CA in ca.crt');
    const none = facts({ caCrt: caOne.certPem });
    assert.equal(none.hasCaKey, false);
    assert.equal(none.keyed, undefined);
  });

  test('caBundles: registered, trusted by every entry, their certificates once each', () => {
    assert.equal(facts(undefined, []).registered, false);
    assert.equal(facts(undefined, ['']).registered, true);
    const f = facts(undefined, [
      caOne.certPem + caTwo.certPem,
      caTwo.certPem + leaf.certPem + caGone.certPem,
    ]);
    assert.deepEqual([...f.trusted], [two.fingerprint]);
    assert.deepEqual(fps(f.bundleCertificates), [one.fingerprint, two.fingerprint, served.fingerprint]);
    assert.deepEqual([...facts(undefined, []).trusted], []);
    assert.deepEqual(
      [...facts(undefined, [caOne.certPem, caOne.certPem, caTwo.certPem]).trusted],
      [],
      'the third entry lacks it',
    );
  });

  test('bundlesEqual: every entry holds exactly these certificates and nothing else', () => {
    const set = new Set([one.fingerprint, two.fingerprint]);
    assert.equal(
      facts(undefined, [caOne.certPem + caTwo.certPem, caTwo.certPem + caOne.certPem]).bundlesEqual(set),
      true,
    );
    assert.equal(facts(undefined, [caOne.certPem + caTwo.certPem, caOne.certPem]).bundlesEqual(set), false);
    assert.equal(
      facts(undefined, [caOne.certPem + caTwo.certPem + caGone.certPem]).bundlesEqual(set),
      false,
      'an expired one too',
    );
    assert.equal(
      facts(undefined, [caOne.certPem + caOne.certPem]).bundlesEqual(new Set([one.fingerprint])),
      false,
    );
    assert.equal(facts(undefined, [`${caOne.certPem}junk\n${caTwo.certPem}`]).bundlesEqual(set), false);
    assert.equal(facts(undefined, [caOne.certPem + leaf.certPem]).bundlesEqual(set), false);
    assert.equal(
      facts(undefined, [caOne.certPem + caTwo.certPem, caOne.certPem + leaf.certPem]).bundlesEqual(set),
      false,
      'as many, but one of them another',
    );
    assert.equal(facts(undefined, []).bundlesEqual(set), true, 'no entry: nothing differs');
  });

  test('the trusted-since annotation: lower-case SHA-256 fingerprints with a time; anything else is ignored', () => {
    const read = (value: string): [string, number][] => [
      ...facts({ annotations: { [CA_TRUSTED_SINCE_ANNOTATION]: value } }).trustedSince,
    ];
    const at = '2026-02-01T00:00:00.000Z';
    assert.deepEqual(read(JSON.stringify({ [fpA]: at, [fpB]: at })), [
      [fpA, Date.parse(at)],
      [fpB, Date.parse(at)],
    ]);
    for (const bad of [
      'A'.repeat(64),
      'a'.repeat(63),
      'a'.repeat(65),
      `x${'a'.repeat(64)}`,
      `${'a'.repeat(64)}x`,
      'g'.repeat(64),
    ])
      assert.deepEqual(read(JSON.stringify({ [bad]: at, [fpB]: at })), [[fpB, Date.parse(at)]], bad);
    assert.deepEqual(read(JSON.stringify({ [fpA]: 'yesterday', [fpB]: 2026 })), []);
    for (const value of ['not json', '[]', 'null', '"text"', `[${JSON.stringify(fpA)}]`])
      assert.deepEqual(read(value), [], value);
    assert.deepEqual([...facts({}).trustedSince], []);
  });

  test('the serving-since annotation: a time, else undefined', () => {
    const at = '2026-02-01T00:00:00.000Z';
    assert.equal(facts({ annotations: { [SERVING_SINCE_ANNOTATION]: at } }).servingSince, Date.parse(at));
    assert.equal(facts({ annotations: { [SERVING_SINCE_ANNOTATION]: 'soon' } }).servingSince, undefined);
    assert.equal(facts({}).servingSince, undefined);
  });

  test('the serving certificate: each problem named, in order', () => {
    const ok = { tlsCrt: leaf.certPem, tlsKey: leaf.keyPem };
    assert.equal(problem(facts(undefined)), 'there is no serving certificate');
    assert.equal(problem(facts({ tlsCrt: ' \n' })), 'there is no serving certificate');
    assert.equal(problem(facts({ tlsCrt: 'junk' })), 'tls.crt is not a certificate');
    assert.equal(
      problem(facts({ tlsCrt: caOne.certPem, tlsKey: caOne.keyPem })),
      'tls.crt is a CA certificate',
    );
    assert.equal(problem(facts({ ...ok, tlsKey: narrowLeaf.keyPem })), 'tls.key is not the key of tls.crt');
    assert.equal(problem(facts({ ...ok, tlsKey: undefined })), 'tls.key is not the key of tls.crt');
    assert.equal(
      problem(facts({ tlsCrt: narrowLeaf.certPem, tlsKey: narrowLeaf.keyPem })),
      "the serving certificate does not cover the Service's names",
    );
    const f = facts(ok);
    assert.equal(f.serving.ok, true);
    assert.equal(f.serving.leaf.fingerprint, served.fingerprint);
    const notYet = facts(ok, [], served.notBefore - 1);
    assert.equal(problem(notYet), 'the serving certificate is expired or not yet valid');
    assert.equal(notYet.serving.leaf?.fingerprint, served.fingerprint);
    assert.equal(facts(ok, [], served.notBefore).serving.ok, true);
    assert.equal(facts(ok, [], served.notAfter - 1).serving.ok, true);
    assert.equal(
      problem(facts(ok, [], served.notAfter)),
      'the serving certificate is expired or not yet valid',
    );
  });

  test('the issuer of the served certificate: from ca.crt, else from a CA of the caBundle', () => {
    const ok = { tlsCrt: leaf.certPem, tlsKey: leaf.keyPem };
    const issuer = (f: SecretFacts): string | undefined =>
      f.serving.ok ? f.serving.issuer?.fingerprint : 'no';
    assert.equal(issuer(facts({ ...ok, caCrt: caTwo.certPem + caOne.certPem })), one.fingerprint);
    assert.equal(
      issuer(facts({ ...ok, caCrt: caTwo.certPem }, [caTwo.certPem + caOne.certPem])),
      one.fingerprint,
    );
    assert.equal(issuer(facts({ ...ok, caCrt: caTwo.certPem }, [caTwo.certPem])), undefined);
    assert.equal(issuer(facts({ ...ok, caCrt: caTwo.certPem })), undefined);
  });
});

describe('lifeStart and formatTrustedSince', () => {
  test('a life starts at notBefore plus the back-dating, never after notAfter', () => {
    assert.equal(lifeStart(one), one.notBefore + CLOCK_SKEW_MS);
    assert.equal(lifeStart({ ...one, notAfter: one.notBefore + 1000 }), one.notBefore + 1000);
  });

  test('trusted-since text is sorted by fingerprint, with ISO times, and reads back', () => {
    const map = new Map([
      [fpB, Date.parse('2026-02-02T00:00:00Z')],
      [fpA, Date.parse('2026-02-01T00:00:00Z')],
    ]);
    const text = formatTrustedSince(map);
    assert.equal(
      text,
      JSON.stringify({ [fpA]: '2026-02-01T00:00:00.000Z', [fpB]: '2026-02-02T00:00:00.000Z' }),
    );
    assert.deepEqual(
      [...facts({ annotations: { [CA_TRUSTED_SINCE_ANNOTATION]: text } }).trustedSince],
      [...map].reverse(),
    );
  });
});
