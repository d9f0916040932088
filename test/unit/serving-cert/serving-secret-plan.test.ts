import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createCertificateAuthority } from '../../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../../src/pki/issue-certificate.js';
import { parseCertificate, parseCertificates } from '../../../src/pki/pem-certificates.js';
import {
  CA_TRUSTED_SINCE_ANNOTATION,
  KCP_SERVING_POLICY,
  SERVING_SINCE_ANNOTATION,
  ServingPolicyError,
  validateServingPolicy,
  WEBHOOK_SERVING_POLICY,
} from '../../../src/serving-cert/serving-policy.js';
import {
  caBundleHoldsOthers,
  planServingSecret,
  ServingIssuerError,
} from '../../../src/serving-cert/serving-secret-plan.js';
import { DNS, START, ServingWorld, type Writer } from './serving-world.js';

const DAY = 24 * 3600 * 1000;
const P = WEBHOOK_SERVING_POLICY;
const own: Writer = { issuer: { kind: 'own' }, policy: P };
const fp = (pem: string | undefined): string | undefined =>
  pem ? parseCertificate(pem)?.fingerprint : undefined;
const caKeyOf = (w: ServingWorld): string | undefined => w.secret?.caKey;
const issuerOf = (w: ServingWorld): string | undefined => {
  const leaf = w.served();
  const cas = parseCertificates(w.secret?.caCrt).certificates;
  return cas.find((c) => leaf?.x509.checkIssued(c.x509) && leaf.x509.verify(c.x509.publicKey))?.fingerprint;
};

async function kcp(): Promise<Writer> {
  const ca = await createCertificateAuthority({ commonName: 'kcp', now: new Date(START - DAY) });
  return { issuer: { kind: 'external', caPem: ca.certPem }, policy: KCP_SERVING_POLICY, externalCa: ca };
}

/** A world whose own writer has bootstrapped: CA in the bundle, certificate served. */
async function bootstrapped(entries = 1): Promise<ServingWorld> {
  const w = new ServingWorld(entries);
  const waiting = await w.settle(own);
  assert.equal(waiting.until, w.now + P.settleMs);
  w.now += P.settleMs;
  await w.settle(own);
  assert.ok(w.served(), 'a certificate is served');
  return w;
}

describe('the serving-secret plan', () => {
  test('fresh and registered: CA, then caBundle, then (after the settle time) the certificate', async () => {
    const w = new ServingWorld();
    const kinds: string[] = [];
    for (;;) {
      const s = await w.step(own);
      kinds.push(s.kind);
      if (s.kind === 'wait') {
        assert.equal(s.until, START + P.settleMs);
        assert.equal(s.pending, true, 'a certificate is due, only not yet');
        break;
      }
    }
    assert.deepEqual(kinds, ['write-secret', 'write-bundle', 'write-secret', 'wait']);
    assert.equal(w.served(), undefined, 'nothing is served before the API server can trust it');
    assert.match(w.secret?.annotations?.[CA_TRUSTED_SINCE_ANNOTATION] ?? '', /2026-01-01T00:00:00.000Z/);
    w.now += P.settleMs - 1;
    assert.equal((await w.step(own)).kind, 'wait');
    w.now += 1;
    const issue = await w.step(own);
    assert.equal(issue.kind, 'write-secret');
    const leaf = w.served();
    assert.ok(leaf);
    assert.equal(issuerOf(w), w.caFingerprints()[0]);
    for (const name of DNS) assert.ok(leaf.x509.checkHost(name), name);
    assert.equal(leaf.notAfter - (w.now - 5 * 60_000), P.servingLifetimeMs + 5 * 60_000);
    assert.equal(w.secret?.annotations?.[SERVING_SINCE_ANNOTATION], new Date(w.now).toISOString());
    const rest = await w.step(own);
    assert.equal(rest.kind, 'wait');
    assert.equal(rest.until, leaf.notAfter - P.servingLifetimeMs / 3);
  });

  test('nobody registers us yet: the certificate is issued at once (nobody calls us)', async () => {
    const w = new ServingWorld(0);
    assert.equal((await w.step(own)).kind, 'write-secret');
    const issue = await w.step(own);
    assert.equal(issue.kind, 'write-secret');
    assert.ok(w.served());
    assert.equal((await w.step(own)).kind, 'wait');
    // A configuration appears: only its caBundle is written, the certificate stays.
    const served = w.secret?.tlsCrt;
    w.bundles = [''];
    await w.settle(own);
    assert.equal(w.secret?.tlsCrt, served);
    assert.deepEqual(
      parseCertificates(w.bundles[0]).certificates.map((c) => c.fingerprint),
      w.caFingerprints(),
    );
  });

  test('renews in the last third of the certificate’s life, with the same CA', async () => {
    const w = await bootstrapped();
    const first = w.served()!;
    const renewAt = first.notAfter - P.servingLifetimeMs / 3;
    w.now = renewAt - 1;
    assert.deepEqual(await w.step(own), {
      kind: 'wait',
      reason: 'the Secret and the caBundle are current',
      until: renewAt,
      pending: false,
    });
    w.now = renewAt;
    const s = await w.step(own);
    assert.equal(s.kind, 'write-secret');
    assert.equal(s.reason, 'the serving certificate is due for renewal');
    assert.notEqual(w.served()?.fingerprint, first.fingerprint);
    assert.equal(w.caFingerprints().length, 1);
  });

  test('the KCP policy renews at half-life', async () => {
    const w = await bootstrapped();
    const leaf = w.served()!;
    const half = leaf.notAfter - KCP_SERVING_POLICY.servingLifetimeMs / 2;
    w.now = half - 1;
    assert.equal(w.plan({ ...own, policy: KCP_SERVING_POLICY }).kind, 'wait');
    w.now = half;
    assert.equal(w.plan({ ...own, policy: KCP_SERVING_POLICY }).kind, 'write-secret');
    assert.equal(w.plan(own).kind, 'wait', 'the webhook’s own policy still waits');
  });

  test('rotates the CA in its last third with an overlap, never serving an unsettled CA', async () => {
    const w = await bootstrapped();
    const oldCa = w.caFingerprints()[0]!;
    const caCert = parseCertificates(w.secret?.caCrt).certificates[0]!;
    const rotateAt = caCert.notAfter - P.caLifetimeMs / 3;
    // Keep the certificate fresh until the rotation.
    while (w.now < rotateAt) {
      const s = await w.settle(own);
      w.now = Math.min(s.until ?? rotateAt, rotateAt);
    }
    const add = await w.step(own);
    assert.equal(add.kind, 'write-secret');
    assert.match(add.reason, /rotation/);
    const [a, b] = w.caFingerprints();
    assert.equal(a, oldCa);
    assert.ok(b && b !== oldCa);
    assert.equal(issuerOf(w), oldCa, 'the old certificate stays');
    await w.settle(own);
    assert.deepEqual(
      parseCertificates(w.bundles[0]).certificates.map((c) => c.fingerprint),
      [oldCa, b],
    );
    // The served certificate moves to the new CA at its renewal, then the old CA leaves after the overlap.
    let switched: number | undefined;
    let dropped: number | undefined;
    for (let i = 0; i < 20 && dropped === undefined; i++) {
      const s = await w.settle(own);
      if (switched === undefined && issuerOf(w) === b) switched = w.now;
      if (!w.caFingerprints().includes(oldCa)) dropped = w.now;
      assert.ok(s.until, 'a deadline');
      if (dropped === undefined) w.now = s.until;
    }
    assert.ok(switched);
    assert.equal(dropped, switched + P.overlapMs);
    assert.deepEqual(w.caFingerprints(), [b]);
    assert.deepEqual(
      parseCertificates(w.bundles[0]).certificates.map((c) => c.fingerprint),
      [b],
    );
    assert.equal(w.secret?.annotations?.[CA_TRUSTED_SINCE_ANNOTATION]?.includes(oldCa), false);
  });

  test('a garbage Secret is rebuilt', async () => {
    const w = new ServingWorld();
    w.secret = {
      tlsCrt: 'not a pem',
      tlsKey: '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n',
      caCrt: '-----BEGIN CERTIFICATE-----\nZ2FyYmFnZQ==\n-----END CERTIFICATE-----\nand more',
      caKey: '\u0000',
      annotations: { [CA_TRUSTED_SINCE_ANNOTATION]: '{not json', [SERVING_SINCE_ANNOTATION]: 'yesterday' },
    };
    const first = await w.step(own);
    assert.equal(first.kind, 'write-secret');
    assert.match(first.reason, /no CA can sign/);
    assert.match(first.reason, /garbage/);
    assert.equal(w.caFingerprints().length, 1);
    w.now += (await w.settle(own)).until! - w.now;
    await w.settle(own);
    assert.equal(issuerOf(w), w.caFingerprints()[0]);
  });

  test('a certificate that does not cover the Service’s names is replaced', async () => {
    const w = await bootstrapped();
    const keyed = parseCertificates(w.secret?.caCrt).certificates[0]!;
    const { loadCertificateAuthority } = await import('../../../src/pki/certificate-authority.js');
    const ca = await loadCertificateAuthority(keyed.pem, w.secret!.caKey!);
    const wrong = await issueCertificate(ca, {
      commonName: 'x',
      dnsNames: ['rt-bootstrapper-webhook-service.other.svc'],
      usage: 'server',
      now: new Date(w.now),
    });
    w.secret = { ...w.secret, tlsCrt: wrong.certPem, tlsKey: wrong.keyPem };
    w.now += 1000;
    const s = await w.step(own);
    assert.equal(s.kind, 'write-secret');
    assert.equal(s.reason, "the serving certificate does not cover the Service's names");
    assert.ok(DNS.every((n) => w.served()?.x509.checkHost(n)));
  });

  test('a tls.key of another certificate is replaced', async () => {
    const w = await bootstrapped();
    w.secret = { ...w.secret, tlsKey: w.secret?.caKey };
    assert.equal(w.plan(own).kind, 'write-secret');
    assert.match((await w.step(own)).reason, /tls.key is not the key/);
  });

  test('ca.key of no CA in ca.crt (the KCP wrote the Secret): kept serving, no CA made until renewal', async () => {
    const k = await kcp();
    const w = new ServingWorld();
    const waiting = await w.settle(k);
    w.now = waiting.until!;
    await w.settle(k);
    assert.equal(issuerOf(w), fp(k.externalCa?.certPem));
    assert.equal(w.secret?.caKey, undefined, 'the KCP writes no ca.key');
    const stray = await createCertificateAuthority({ commonName: 'stray' });
    w.secret = { ...w.secret, caKey: stray.keyPem };
    w.now += 1000;
    const s = await w.step(own);
    assert.equal(s.kind, 'write-secret');
    assert.match(s.reason, /ca.key that belongs to no CA/);
    assert.equal(caKeyOf(w), undefined);
    const rest = await w.step(own);
    assert.equal(rest.kind, 'wait');
    const leaf = w.served()!;
    assert.equal(rest.until, leaf.notAfter - KCP_SERVING_POLICY.servingLifetimeMs / 3);
    // The KCP is gone; in the last third the webhook brings its own CA through the protocol.
    w.now = rest.until!;
    const add = await w.step(own);
    assert.match(add.reason, /no CA can sign: adding one/);
    assert.equal(issuerOf(w), fp(k.externalCa?.certPem), 'still the KCP’s certificate until settled');
    const settleWait = await w.settle(own);
    w.now = settleWait.until!;
    await w.settle(own);
    assert.equal(issuerOf(w), w.caFingerprints()[1]);
  });

  test('the KCP replaces a certificate it did not issue through the same steps, then drops ca.key', async () => {
    const w = await bootstrapped();
    const ownCa = w.caFingerprints()[0]!;
    const k = await kcp();
    const kFp = fp(k.externalCa?.certPem)!;
    w.now += DAY;
    const add = await w.step(k);
    assert.equal(add.kind, 'write-secret');
    assert.deepEqual(w.caFingerprints(), [ownCa, kFp]);
    assert.ok(w.secret?.caKey, 'ca.key stays while its CA does');
    const wait = await w.settle(k);
    assert.equal(issuerOf(w), ownCa);
    assert.equal(wait.until, w.now + P.settleMs);
    // The webhook's writer in between changes nothing: the KCP's new CA is not taken away.
    assert.equal((await w.step(own)).kind, 'wait');
    w.now = wait.until!;
    await w.settle(k);
    assert.equal(issuerOf(w), kFp);
    const switched = w.now;
    assert.equal((await w.step(own)).kind, 'wait', 'the webhook leaves a fresh certificate alone');
    const next = await w.settle(k);
    assert.equal(next.until, switched + P.overlapMs);
    w.now = next.until!;
    await w.settle(k);
    assert.deepEqual(w.caFingerprints(), [kFp]);
    assert.equal(caKeyOf(w), undefined);
    assert.equal(parseCertificates(w.bundles[0]).certificates.length, 1);
    assert.equal((await w.step(own)).kind, 'wait');
  });

  test('every webhook entry must hold the CA; one without it is rewritten', async () => {
    const w = await bootstrapped(2);
    w.setBundles([w.bundles[0]!, '']);
    const s = await w.step(own);
    assert.equal(s.kind, 'write-secret', 'first the CA is no longer counted as trusted');
    assert.equal(w.secret?.annotations?.[CA_TRUSTED_SINCE_ANNOTATION], undefined);
    assert.equal((await w.step(own)).kind, 'write-bundle');
    assert.equal(w.bundles[0], w.bundles[1]);
  });

  test('the issuer of the served certificate is adopted from the caBundle when ca.crt lost it', async () => {
    const w = await bootstrapped();
    const ca = w.caFingerprints()[0];
    w.secret = { ...w.secret, caCrt: 'garbage' };
    const s = await w.step(own);
    assert.equal(s.kind, 'write-secret');
    assert.deepEqual(w.caFingerprints(), [ca]);
    assert.equal((await w.step(own)).kind, 'wait');
  });

  test('an expired CA leaves ca.crt and the caBundle', async () => {
    const w = await bootstrapped();
    const old = await createCertificateAuthority({
      commonName: 'old',
      validityMs: DAY,
      now: new Date(w.now),
    });
    w.secret = { ...w.secret, caCrt: `${w.secret?.caCrt ?? ''}${old.certPem}` };
    await w.settle(own);
    assert.equal(parseCertificates(w.bundles[0]).certificates.length, 2);
    w.now += DAY;
    const s = await w.step(own);
    assert.match(s.reason, /expired/);
    await w.settle(own);
    assert.equal(parseCertificates(w.bundles[0]).certificates.length, 1);
  });

  for (const [who, writer] of [
    ['the webhook', () => Promise.resolve(own)],
    ['the KCP', kcp],
  ] as const)
    test(`${who} takes over an install serving under another CA: that CA stays in every caBundle until no Pod of it may serve`, async () => {
      const w = new ServingWorld(2);
      const upstream = await createCertificateAuthority({
        commonName: 'upstream',
        now: new Date(START - DAY),
      });
      const upstreamFp = fp(upstream.certPem)!;
      w.setBundles([upstream.certPem, upstream.certPem]);
      w.foreignServers = true;
      const wr = await writer();
      const input = {
        secret: w.secret,
        bundles: w.bundles,
        issuer: wr.issuer,
        dnsNames: DNS,
        now: w.now,
        policy: wr.policy,
      };
      assert.equal(caBundleHoldsOthers(input), true, 'the plan needs to know about the Pods');
      const held = (): void => {
        for (const b of w.bundles)
          assert.ok(
            parseCertificates(b).certificates.some((c) => c.fingerprint === upstreamFp),
            `the upstream CA is in every caBundle at ${w.log.at(-1) ?? 'the start'}`,
          );
      };
      // Our CA, the certificate after the settle time, and days of renewals: the upstream CA stays.
      for (let i = 0; i < 12; i++) {
        const s = await w.step(wr);
        held();
        if (s.kind === 'wait') {
          assert.equal(s.pending, true);
          assert.ok(
            s.until !== undefined && s.until <= w.now + wr.policy.settleMs,
            'looks at the Pods again soon',
          );
          w.now = s.until;
        }
      }
      assert.ok(w.served(), 'our certificate is served meanwhile');
      const ours = w.caFingerprints();
      assert.ok(issuerOf(w) !== undefined && ours.includes(issuerOf(w)!));
      const wait = await w.settle(wr);
      assert.match(wait.reason, /keeping 1 certificate/);
      held();
      // The last Pod of the other install is gone: its CA leaves, ours stay.
      w.foreignServers = false;
      const s = await w.step(wr);
      assert.equal(s.kind, 'write-bundle');
      for (const b of w.bundles)
        assert.deepEqual(
          parseCertificates(b).certificates.map((c) => c.fingerprint),
          ours,
        );
      const after = await w.settle(wr);
      assert.equal(after.pending, false);
      assert.equal(
        caBundleHoldsOthers({ ...input, secret: w.secret, bundles: w.bundles, now: w.now }),
        false,
        'at rest nobody needs to look at the Pods',
      );
    });

  test('without Pods of another install, a CA we did not make leaves the caBundle at once', async () => {
    const w = new ServingWorld();
    const upstream = await createCertificateAuthority({ commonName: 'upstream', now: new Date(START - DAY) });
    w.setBundles([upstream.certPem]);
    await w.settle(own);
    assert.deepEqual(
      parseCertificates(w.bundles[0]).certificates.map((c) => c.fingerprint),
      w.caFingerprints(),
    );
  });

  test('an expired certificate of another install leaves the caBundle even while its Pods run', async () => {
    const w = await bootstrapped();
    const upstream = await createCertificateAuthority({
      commonName: 'upstream',
      validityMs: DAY,
      now: new Date(w.now),
    });
    w.setBundles([`${w.bundles[0] ?? ''}${upstream.certPem}`]);
    w.foreignServers = true;
    assert.equal((await w.settle(own)).pending, true, 'held while it is valid');
    assert.equal(parseCertificates(w.bundles[0]).certificates.length, 2);
    w.now += DAY;
    await w.settle(own);
    assert.deepEqual(
      parseCertificates(w.bundles[0]).certificates.map((c) => c.fingerprint),
      w.caFingerprints(),
    );
  });

  test('the external issuer’s CA must be a valid CA', async () => {
    const ca = await createCertificateAuthority({ commonName: 'c' });
    const leaf = await issueCertificate(ca, { commonName: 'l', usage: 'server' });
    const input = { secret: undefined, bundles: [], dnsNames: DNS, now: Date.now(), policy: P };
    assert.throws(
      () => planServingSecret({ ...input, issuer: { kind: 'external', caPem: leaf.certPem } }),
      ServingIssuerError,
    );
    assert.throws(
      () => planServingSecret({ ...input, issuer: { kind: 'external', caPem: 'x' } }),
      ServingIssuerError,
    );
  });

  test('a policy that cannot work is refused with the field named', () => {
    assert.throws(() => {
      validateServingPolicy({ ...P, settleMs: 0 });
    }, /settleMs must be positive/);
    assert.throws(() => {
      validateServingPolicy({ ...P, servingRenewFraction: 1 });
    }, /servingRenewFraction/);
    assert.throws(() => {
      validateServingPolicy({ ...P, servingLifetimeMs: 30_000, settleMs: 20_000 });
    }, ServingPolicyError);
    validateServingPolicy(P);
    validateServingPolicy(KCP_SERVING_POLICY);
  });
});
