import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { createCertificateAuthority } from '../../../src/pki/certificate-authority.js';
import { issuedBy, parseCertificate, parseCertificates } from '../../../src/pki/pem-certificates.js';
import type { ServingPolicy } from '../../../src/serving-cert/serving-policy.js';
import { ServingWorld, type Writer } from './serving-world.js';

const DAY = 24 * 3600 * 1000;
// A shorter span and fewer runs under mutation testing (scripts/mutation-test.mjs sets
// RTB_SIMULATED_DAYS and RTB_SIMULATION_RUNS), where every surviving mutant runs this file again.
const DAYS = Number(process.env.RTB_SIMULATED_DAYS ?? 365);
const SPAN = DAYS * DAY;
const RUNS = Number(process.env.RTB_SIMULATION_RUNS ?? 3);
// Short lives, so a year holds many renewals and CA rotations.
const OWN_POLICY: ServingPolicy = {
  servingLifetimeMs: 10 * DAY,
  servingRenewFraction: 1 / 3,
  caLifetimeMs: 40 * DAY,
  caRotateFraction: 1 / 3,
  settleMs: 20_000,
  overlapMs: 3600_000,
};
const KCP_POLICY: ServingPolicy = { ...OWN_POLICY, servingRenewFraction: 1 / 2 };
const own: Writer = { issuer: { kind: 'own' }, policy: OWN_POLICY };

/** A PRNG from a seed (mulberry32), so one fast-check value drives a whole year. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** A step of 5 s to 1 day, log-uniform: many short steps around each deadline, a few long ones. */
const stepMs = (r: () => number): number => Math.round(Math.exp(Math.log(5000) + r() * Math.log(DAY / 5000)));

/**
 * The invariant: whatever the Secret serves was signed by a CA that every caBundle has held for
 * at least the settle time, and (once anything was served) it is valid now.
 */
function checkInvariant(w: ServingWorld, servedOnce: boolean): string | undefined {
  const leaf = w.served();
  if (!leaf) return servedOnce ? 'the served certificate disappeared' : undefined;
  const trustedCas = parseCertificates(w.bundles[0]).certificates.filter((c) =>
    w.bundledSince.has(c.fingerprint),
  );
  const issuer = trustedCas.find((c) => issuedBy(leaf, c));
  if (!issuer) return 'the served certificate’s CA is not in every caBundle';
  const since = w.bundledSince.get(issuer.fingerprint) ?? Infinity;
  if (w.now - since < OWN_POLICY.settleMs)
    return `its CA has been in the caBundle for only ${w.now - since} ms`;
  if (!(leaf.notBefore <= w.now && w.now < leaf.notAfter)) return 'the served certificate is not valid now';
  if (issuer.notAfter <= w.now) return 'its CA has expired';
  return undefined;
}

describe('the serving-secret plan over a year', () => {
  test('the webhook alone: at every step the served CA was trusted for the settle time', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer(), fc.integer({ min: 1, max: 2 }), async (seed, entries) => {
        const r = random(seed);
        const w = new ServingWorld(entries);
        let servedOnce = false;
        const issuers = new Set<string>();
        const check = (): void => {
          const broken = checkInvariant(w, servedOnce);
          assert.equal(
            broken,
            undefined,
            `${broken ?? ''} at ${new Date(w.now).toISOString()}\n${w.log.slice(-12).join('\n')}`,
          );
          servedOnce ||= w.served() !== undefined;
        };
        const end = w.now + SPAN;
        while (w.now < end) {
          for (let i = 0; i < 12; i++) {
            const s = await w.step(own);
            check();
            if (s.kind === 'wait') break;
          }
          const leaf = w.served();
          const issuer =
            leaf && parseCertificates(w.secret?.caCrt).certificates.find((c) => issuedBy(leaf, c));
          if (issuer) issuers.add(issuer.fingerprint);
          assert.ok(w.caFingerprints().length <= 3, 'at most three CAs in ca.crt');
          w.now += stepMs(r);
          check();
        }
        // A CA lives 40 days and is replaced after about 27: a year needs at least 12 of them.
        const least = Math.floor(DAYS / 30);
        assert.ok(issuers.size >= least, `${issuers.size} CAs signed served certificates, not ${least}`);
      }),
      { numRuns: RUNS, seed: 20260101 },
    );
  });

  test('the KCP and the webhook both writing, the KCP coming and going: no broken step, no fight', async () => {
    await fc.assert(
      fc.asyncProperty(fc.integer(), async (seed) => {
        const r = random(seed);
        const w = new ServingWorld(2);
        let kcpCa = await createCertificateAuthority({
          commonName: 'kcp',
          validityMs: 100 * DAY,
          now: new Date(w.now),
        });
        const kcp = (): Writer => ({
          issuer: { kind: 'external', caPem: kcpCa.certPem },
          policy: KCP_POLICY,
          externalCa: kcpCa,
        });
        let kcpUp = true;
        let servedOnce = false;
        let kcpIssued = 0;
        let ownIssuedWhileKcpUp = 0;
        const end = w.now + SPAN;
        while (w.now < end) {
          // The KCP rotates its own CA in the last third of its life (as its CaStore does).
          const kcpCert = parseCertificate(kcpCa.certPem)!;
          if (kcpCert.notAfter - w.now < 33 * DAY)
            kcpCa = await createCertificateAuthority({
              commonName: 'kcp',
              validityMs: 100 * DAY,
              now: new Date(w.now),
            });
          if (r() < 0.002) kcpUp = !kcpUp;
          // Both writers until neither has anything to do; this must end (no ping-pong).
          for (let round = 0; ; round++) {
            assert.ok(round < 6, `the writers do not agree:\n${w.log.slice(-16).join('\n')}`);
            const writesBefore = w.writes;
            const order = r() < 0.5 ? ['kcp', 'own'] : ['own', 'kcp'];
            for (const who of order) {
              if (who === 'kcp' && !kcpUp) continue;
              for (let i = 0; i < 12; i++) {
                const before = w.secret?.tlsCrt;
                const s = await w.step(who === 'kcp' ? kcp() : own);
                if (w.secret?.tlsCrt !== before) {
                  if (who === 'kcp') kcpIssued++;
                  else if (kcpUp) ownIssuedWhileKcpUp++;
                }
                const broken = checkInvariant(w, servedOnce);
                assert.equal(broken, undefined, `${broken ?? ''}\n${w.log.slice(-12).join('\n')}`);
                servedOnce ||= w.served() !== undefined;
                if (s.kind === 'wait') break;
              }
            }
            if (w.writes === writesBefore) break;
          }
          assert.ok(w.caFingerprints().length <= 4, 'at most four CAs in ca.crt');
          w.now += stepMs(r);
          assert.equal(checkInvariant(w, servedOnce), undefined);
        }
        // The KCP renews its certificates (10 days, renewed at half) about every 5 days while up.
        assert.ok(kcpIssued > DAYS / 36, `the KCP issued ${kcpIssued} certificates`);
        // The webhook issues while the KCP is up only for the first certificate or right after
        // the KCP came back (its fresh own certificate is replaced by the KCP then).
        assert.ok(ownIssuedWhileKcpUp <= 3, `the webhook issued ${ownIssuedWhileKcpUp} while the KCP was up`);
      }),
      { numRuns: RUNS, seed: 7 },
    );
  });
});
