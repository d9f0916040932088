import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  createCertificateAuthority,
  type CertificateAuthority,
} from '../../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../../src/pki/issue-certificate.js';
import { parseCertificate, parseCertificates } from '../../../src/pki/pem-certificates.js';
import {
  CA_TRUSTED_SINCE_ANNOTATION,
  KCP_SERVING_POLICY,
  SERVING_SINCE_ANNOTATION,
  ServingPolicyError,
  type ServingPolicy,
  validateServingPolicy,
  WEBHOOK_SERVING_POLICY,
} from '../../../src/serving-cert/serving-policy.js';
import {
  caBundleHoldsOthers,
  planServingSecret,
  ServingIssuerError,
  type ServingIssuer,
  type ServingStep,
} from '../../../src/serving-cert/serving-secret-plan.js';
import {
  formatTrustedSince,
  type ServingSecretContent,
} from '../../../src/serving-cert/serving-secret-state.js';
import { DNS, START, ServingWorld, type Writer } from './serving-world.js';
import { caFrom, servingLeaf } from './serving-certs.js';

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
    const old = await caFrom('old', w.now, DAY);
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
    const upstream = await caFrom('upstream', w.now, DAY);
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

// The plan asked directly, one state at a time: the exact steps (reasons as operators read them,
// pending flags, deadlines) at the edges of each rule.
const NOW = START;
const K = await caFrom('k', NOW - DAY, 365 * DAY);
const O = await caFrom('o', NOW - DAY, 365 * DAY);
const U = await createCertificateAuthority({ commonName: 'upstream', now: new Date(NOW - DAY) });
const KCP = await createCertificateAuthority({ commonName: 'kcp', now: new Date(NOW - DAY) });
const leafK = await servingLeaf(K, NOW - DAY, 90 * DAY);
const leafO = await servingLeaf(O, NOW - DAY, 90 * DAY);
const fpOf = (pem: string): string => {
  const f = fp(pem);
  assert.ok(f);
  return f;
};
const notAfterOf = (pem: string): number => {
  const c = parseCertificate(pem);
  assert.ok(c);
  return c.notAfter;
};
const iso = (ms: number): string => new Date(ms).toISOString();
const trustedText = (since: Record<string, number>): string =>
  formatTrustedSince(new Map(Object.entries(since)));
const X = 'a'.repeat(64);
/** The renewal deadline of leafK (issued a day ago for 90 days, its CA lives longer). */
const RENEW_K = notAfterOf(leafK.certPem) - (90 * DAY) / 3;

interface SecretSpec {
  tls?: { certPem: string; keyPem: string };
  caCrt: string;
  caKey?: string;
  trusted?: Record<string, number>;
  servingSince?: number;
}
const secretOf = (s: SecretSpec): ServingSecretContent => ({
  tlsCrt: s.tls?.certPem,
  tlsKey: s.tls?.keyPem,
  caCrt: s.caCrt,
  caKey: s.caKey,
  annotations: {
    ...(s.trusted ? { [CA_TRUSTED_SINCE_ANNOTATION]: trustedText(s.trusted) } : {}),
    ...(s.servingSince !== undefined ? { [SERVING_SINCE_ANNOTATION]: iso(s.servingSince) } : {}),
  },
});
const planOf = (
  s: SecretSpec,
  bundles: string[],
  more: { now?: number; issuer?: ServingIssuer; policy?: ServingPolicy; foreignServers?: boolean } = {},
): ServingStep =>
  planServingSecret({
    secret: secretOf(s),
    bundles,
    issuer: more.issuer ?? { kind: 'own' },
    dnsNames: DNS,
    now: more.now ?? NOW,
    policy: more.policy ?? P,
    foreignServers: more.foreignServers ?? false,
  });
/** Our CA K signs the served certificate, K is in the caBundle since a day. */
const atRest: SecretSpec = {
  tls: leafK,
  caCrt: K.certPem,
  caKey: K.keyPem,
  trusted: { [fpOf(K.certPem)]: NOW - DAY },
  servingSince: NOW - DAY,
};

/** {@link atRest} with `second` after K in ca.crt, both trusted since a day, serving since `servingSince`. */
const withSecondCa = (second: CertificateAuthority, servingSince: number | undefined): SecretSpec => ({
  ...atRest,
  caCrt: K.certPem + second.certPem,
  trusted: { [fpOf(K.certPem)]: NOW - DAY, [fpOf(second.certPem)]: NOW - DAY },
  servingSince,
});

describe('the serving-secret plan, step by step', () => {
  test('at rest: current, not pending, until the renewal', () => {
    assert.deepEqual(planOf(atRest, [K.certPem]), {
      kind: 'wait',
      reason: 'the Secret and the caBundle are current',
      until: RENEW_K,
      pending: false,
    });
  });

  test('a served certificate whose CA is in neither ca.crt nor the caBundle is issued again by the signing CA', () => {
    assert.deepEqual(planOf({ ...atRest, tls: leafO }, [K.certPem]), {
      kind: 'write-secret',
      reason: 'the CA of the serving certificate is in neither ca.crt nor the caBundle',
      write: {
        caCerts: [K.certPem],
        caKey: 'keep',
        issue: { signer: fpOf(K.certPem), notAfter: NOW + P.servingLifetimeMs },
        annotations: {
          [CA_TRUSTED_SINCE_ANNOTATION]: trustedText({ [fpOf(K.certPem)]: NOW - DAY }),
          [SERVING_SINCE_ANNOTATION]: iso(NOW),
        },
      },
    });
  });

  test('the external issuer replaces a certificate it did not issue once its CA settled, not a millisecond before', () => {
    const trustedAt = NOW - 1000;
    const spec: SecretSpec = {
      ...atRest,
      caCrt: K.certPem + KCP.certPem,
      trusted: { [fpOf(K.certPem)]: NOW - DAY, [fpOf(KCP.certPem)]: trustedAt },
    };
    const more = { issuer: { kind: 'external', caPem: KCP.certPem } as const, policy: KCP_SERVING_POLICY };
    const bundles = [K.certPem + KCP.certPem];
    const settled = trustedAt + KCP_SERVING_POLICY.settleMs;
    assert.deepEqual(planOf(spec, bundles, { ...more, now: settled - 1 }), {
      kind: 'wait',
      reason:
        "the serving certificate was not issued by the issuer's CA; waiting for the API server to load the signing CA",
      until: settled,
      pending: true,
    });
    const issue = planOf(spec, bundles, { ...more, now: settled });
    assert.equal(issue.kind, 'write-secret');
    assert.equal(issue.reason, "the serving certificate was not issued by the issuer's CA");
    assert.equal(issue.write.issue?.signer, fpOf(KCP.certPem));
    assert.equal(issue.write.caKey, 'keep');
  });

  test('the issuer’s CA is refused as a ServingIssuerError: not a CA, or expired from its notAfter on', () => {
    const input = { secret: undefined, bundles: [], dnsNames: DNS, policy: P };
    const notCa = (): ServingStep =>
      planServingSecret({ ...input, now: NOW, issuer: { kind: 'external', caPem: leafK.certPem } });
    assert.throws(notCa, ServingIssuerError);
    assert.throws(notCa, {
      name: 'ServingIssuerError',
      message: "the issuer's CA certificate is not a CA certificate",
    });
    const end = notAfterOf(KCP.certPem);
    const at = (now: number): ServingStep =>
      planServingSecret({ ...input, now, issuer: { kind: 'external', caPem: KCP.certPem } });
    assert.throws(() => at(end), {
      name: 'ServingIssuerError',
      message: "the issuer's CA certificate has expired",
    });
    assert.throws(() => at(end + 1), ServingIssuerError);
    assert.equal(at(end - 1).kind, 'write-secret', 'valid until its last millisecond');
  });

  test('our CA signs until its rotation instant, then the next CA is added, its key and the served CA kept', async () => {
    const short = await createCertificateAuthority({
      commonName: 's',
      now: new Date(NOW - DAY),
      validityMs: 30 * DAY,
    });
    const rotateAt = notAfterOf(short.certPem) - (30 * DAY) / 3;
    const tlsFrom = async (ca: typeof short) =>
      issueCertificate(ca, {
        commonName: 'w',
        dnsNames: DNS,
        usage: 'server',
        now: new Date(rotateAt - DAY),
        validityMs: 9 * DAY,
      });
    const spec: SecretSpec = {
      tls: await tlsFrom(short),
      caCrt: short.certPem,
      caKey: short.keyPem,
      trusted: { [fpOf(short.certPem)]: NOW },
      servingSince: rotateAt - DAY,
    };
    assert.deepEqual(planOf(spec, [short.certPem], { now: rotateAt - 1 }), {
      kind: 'wait',
      reason: 'the Secret and the caBundle are current',
      until: rotateAt,
      pending: false,
    });
    const rotate = {
      kind: 'write-secret',
      reason: 'the signing CA is due for rotation: adding the next CA',
      write: {
        caCerts: [short.certPem],
        createCa: { lifetimeMs: P.caLifetimeMs },
        caKey: 'keep',
        annotations: {
          [CA_TRUSTED_SINCE_ANNOTATION]: trustedText({ [fpOf(short.certPem)]: NOW }),
          [SERVING_SINCE_ANNOTATION]: iso(rotateAt - DAY),
        },
      },
    };
    assert.deepEqual(planOf(spec, [short.certPem], { now: rotateAt }), rotate);
    // Served by another CA, both trusted long past the overlap: neither the keyed CA nor the served one leaves.
    const both: SecretSpec = {
      ...spec,
      tls: await tlsFrom(O),
      caCrt: short.certPem + O.certPem,
      trusted: { [fpOf(short.certPem)]: NOW, [fpOf(O.certPem)]: NOW },
      servingSince: NOW,
    };
    assert.deepEqual(planOf(both, [short.certPem + O.certPem], { now: rotateAt }), {
      ...rotate,
      write: {
        ...rotate.write,
        caCerts: [short.certPem, O.certPem],
        annotations: {
          [CA_TRUSTED_SINCE_ANNOTATION]: trustedText({ [fpOf(short.certPem)]: NOW, [fpOf(O.certPem)]: NOW }),
          [SERVING_SINCE_ANNOTATION]: iso(NOW),
        },
      },
    });
  });

  test('without a serving-since, no CA is retired: the time is recorded first', () => {
    const spec = withSecondCa(O, undefined);
    assert.deepEqual(planOf(spec, [K.certPem + O.certPem]), {
      kind: 'write-secret',
      reason: 'recording since when each CA is trusted and the certificate served',
      write: {
        caCerts: [K.certPem, O.certPem],
        caKey: 'keep',
        annotations: {
          [CA_TRUSTED_SINCE_ANNOTATION]: trustedText({
            [fpOf(K.certPem)]: NOW - DAY,
            [fpOf(O.certPem)]: NOW - DAY,
          }),
          [SERVING_SINCE_ANNOTATION]: iso(NOW),
        },
      },
    });
  });

  test('a trusted-since of another CA is no record of ours: recorded again, though as many entries', () => {
    const spec: SecretSpec = { ...atRest, trusted: { [X]: NOW - DAY } };
    assert.deepEqual(planOf(spec, [K.certPem]), {
      kind: 'write-secret',
      reason: 'recording since when each CA is trusted and the certificate served',
      write: {
        caCerts: [K.certPem],
        caKey: 'keep',
        annotations: {
          [CA_TRUSTED_SINCE_ANNOTATION]: trustedText({ [fpOf(K.certPem)]: NOW }),
          [SERVING_SINCE_ANNOTATION]: iso(NOW - DAY),
        },
      },
    });
  });

  test('while nobody registers us, the trusted-since is kept as it is', () => {
    assert.deepEqual(planOf(atRest, []), {
      kind: 'wait',
      reason: 'the Secret and the caBundle are current',
      until: RENEW_K,
      pending: false,
    });
  });

  test('a CA not yet in every caBundle is not retired: the caBundle is written', () => {
    const spec: SecretSpec = { ...atRest, caCrt: K.certPem + O.certPem };
    assert.deepEqual(planOf(spec, [K.certPem]), {
      kind: 'write-bundle',
      reason: "the caBundle differs from ca.crt's unexpired CAs",
      bundle: K.certPem + O.certPem,
    });
  });

  test('Pods of another install: its CA is kept in the caBundle, and looked at again after the settle time', () => {
    const foreign = { foreignServers: true };
    assert.deepEqual(planOf({ ...atRest, trusted: {} }, [U.certPem], foreign), {
      kind: 'write-bundle',
      reason:
        "the caBundle differs from ca.crt's unexpired CAs plus those Pods we did not start may serve with",
      bundle: K.certPem + U.certPem,
    });
    assert.deepEqual(planOf(atRest, [K.certPem + U.certPem], foreign), {
      kind: 'wait',
      reason: 'keeping 1 certificate(s) in the caBundle while Pods we did not start may serve with them',
      until: NOW + P.settleMs,
      pending: true,
    });
  });

  test('caBundleHoldsOthers: only a certificate that ca.crt does not hold counts', () => {
    const input = (bundles: string[]) => ({
      secret: secretOf(atRest),
      bundles,
      issuer: { kind: 'own' } as const,
      dnsNames: DNS,
      now: NOW,
      policy: P,
    });
    assert.equal(caBundleHoldsOthers(input([K.certPem + U.certPem])), true);
    assert.equal(caBundleHoldsOthers(input([U.certPem])), true);
    assert.equal(caBundleHoldsOthers(input([K.certPem])), false);
    assert.equal(caBundleHoldsOthers(input([])), false);
  });

  test('the CA of the served certificate is adopted from the caBundle, with that reason alone', () => {
    const spec: SecretSpec = { tls: leafK, caCrt: '', trusted: {}, servingSince: NOW - DAY };
    assert.deepEqual(planOf(spec, [K.certPem]), {
      kind: 'write-secret',
      reason: 'adding the CA of the issuer or of the served certificate',
      write: {
        caCerts: [K.certPem],
        createCa: undefined,
        caKey: 'keep',
        annotations: { [CA_TRUSTED_SINCE_ANNOTATION]: undefined, [SERVING_SINCE_ANNOTATION]: iso(NOW - DAY) },
      },
    });
    assert.equal(
      planOf({ ...spec, caKey: O.keyPem }, [K.certPem]).reason,
      'adding the CA of the issuer or of the served certificate; removing a ca.key that belongs to no CA in ca.crt',
    );
  });

  test('a CA past its overlap leaves ca.crt with its trusted-since, and only that reason is given', () => {
    const spec: SecretSpec = {
      ...atRest,
      caCrt: K.certPem + O.certPem,
      trusted: { [fpOf(K.certPem)]: NOW - DAY, [fpOf(O.certPem)]: NOW - DAY, [X]: NOW - DAY },
    };
    assert.deepEqual(planOf(spec, [K.certPem + O.certPem]), {
      kind: 'write-secret',
      reason: 'removing CAs past their overlap',
      write: {
        caCerts: [K.certPem],
        createCa: undefined,
        caKey: 'keep',
        annotations: {
          [CA_TRUSTED_SINCE_ANNOTATION]: trustedText({ [fpOf(K.certPem)]: NOW - DAY }),
          [SERVING_SINCE_ANNOTATION]: iso(NOW - DAY),
        },
      },
    });
  });

  test('a duplicate in ca.crt is dropped; the trusted-since keeps the CAs that stay and no others', () => {
    const trusted = { [fpOf(K.certPem)]: NOW - DAY, [fpOf(O.certPem)]: NOW - 1000 };
    const spec: SecretSpec = {
      ...atRest,
      caCrt: K.certPem + K.certPem + O.certPem,
      trusted: { ...trusted, [X]: NOW - DAY },
    };
    assert.deepEqual(planOf(spec, [K.certPem + O.certPem]), {
      kind: 'write-secret',
      reason: 'dropping garbage, duplicate and expired entries of ca.crt',
      write: {
        caCerts: [K.certPem, O.certPem],
        createCa: undefined,
        caKey: 'keep',
        annotations: {
          [CA_TRUSTED_SINCE_ANNOTATION]: trustedText(trusted),
          [SERVING_SINCE_ANNOTATION]: iso(NOW - DAY),
        },
      },
    });
  });

  test('several reasons are joined with "; "', () => {
    const step = planOf({ caCrt: '-----BEGIN CERTIFICATE-----\nZ2FyYmFnZQ==\n-----END CERTIFICATE-----\n' }, [
      K.certPem,
    ]);
    assert.equal(
      step.reason,
      'no CA can sign: adding one; dropping garbage, duplicate and expired entries of ca.crt',
    );
  });

  test('at rest the next deadline may be a CA’s expiry, before its retirement', async () => {
    const brief = await createCertificateAuthority({
      commonName: 'b',
      now: new Date(NOW),
      validityMs: 30 * 60_000,
    });
    const spec = withSecondCa(brief, NOW);
    assert.deepEqual(planOf(spec, [K.certPem + brief.certPem]), {
      kind: 'wait',
      reason: 'the Secret and the caBundle are current',
      until: notAfterOf(brief.certPem),
      pending: false,
    });
  });
});
