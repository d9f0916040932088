import type { KubernetesObject, V1Secret } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { before, describe, test } from 'node:test';
import type { RuntimeBootstrapper } from '../../../../src/api/runtime-bootstrapper.js';
import { MUTATING_WEBHOOK_CONFIGURATION, MUTATING_WEBHOOK_NAME } from '../../../../src/api/runtime-names.js';
import {
  afterRegistration,
  MAX_SERVING_WAIT_MS,
  nextServingStep,
  registrationAnswers,
  waitOutcome,
  type ServingView,
  type ServingWait,
} from '../../../../src/controller/direct/serving-certificate.js';
import {
  MAX_SERVING_WRITES,
  servingCertificateState,
} from '../../../../src/controller/direct/serving-cert-state.js';
import {
  goTo,
  type BootstrapperOps,
  type Outcome,
  type StateContext,
  type StateFn,
} from '../../../../src/controller/direct/state-context.js';
import { runStateMachine } from '../../../../src/controller/direct/state-machine.js';
import { StatusBuilder } from '../../../../src/controller/direct/status-builder.js';
import {
  createCertificateAuthority,
  type CertificateAuthority,
} from '../../../../src/pki/certificate-authority.js';
import { parseCertificates, issuedBy } from '../../../../src/pki/pem-certificates.js';
import { KCP_SERVING_POLICY, WEBHOOK_SERVING_POLICY } from '../../../../src/serving-cert/serving-policy.js';
import {
  planServingSecret,
  ServingIssuerError,
  type SecretWrite,
} from '../../../../src/serving-cert/serving-secret-plan.js';
import { readServingSecret } from '../../../../src/serving-cert/serving-secret-codec.js';
import { DNS, endOfWork, FakeServingRuntime, START, unusedOps } from './fake-serving-runtime.js';
import { stateContext } from '../../../support/state-context.js';

const DAY = 24 * 3600_000;
const P = KCP_SERVING_POLICY;
let kcpCa: CertificateAuthority;
before(async () => {
  kcpCa = await createCertificateAuthority({ commonName: 'kcp', now: new Date(START - DAY) });
});

const configuration = (kind: string, name: string, entry: string): KubernetesObject =>
  ({
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind,
    metadata: { name },
    webhooks: [{ name: entry, clientConfig: { service: { name: 's', namespace: 'kyma-system' } } }],
  }) as KubernetesObject;
const MWC = configuration(
  'MutatingWebhookConfiguration',
  MUTATING_WEBHOOK_CONFIGURATION,
  MUTATING_WEBHOOK_NAME,
);
const VWC = configuration('ValidatingWebhookConfiguration', 'v', 'drift.example');

/** A wait step with these fields. */
const wait = (until: number | undefined, pending: boolean): ServingWait => ({
  kind: 'wait',
  reason: 'r',
  until,
  pending,
});

/** The runtime as KIM leaves it: the webhook's own writer settled, a year before the takeover. */
async function kimInstalled(): Promise<FakeServingRuntime> {
  const rt = new FakeServingRuntime(kcpCa);
  rt.now = START - 30 * DAY;
  rt.register([MWC]);
  for (let i = 0; i < 12; i++) {
    const view = rt.view();
    const step = planServingSecret({
      secret: readServingSecret(view.secret),
      bundles: rt.bundles(),
      issuer: { kind: 'own' },
      dnsNames: DNS,
      now: rt.now,
      policy: WEBHOOK_SERVING_POLICY,
    });
    if (step.kind === 'write-secret') await rt.writeSecret(view.secret, step.write);
    else if (step.kind === 'write-bundle') await rt.writeBundle(view, step.bundle);
    else if (step.pending) rt.now += WEBHOOK_SERVING_POLICY.settleMs;
    else break;
  }
  assert.ok(readServingSecret(rt.secret)?.caKey, 'the webhook keeps its own CA');
  rt.now = START;
  rt.writes.length = 0;
  return rt;
}

/**
 * The serving part of the ops over `rt`. Around every write it checks that admission calls that
 * succeeded before it still succeed after it: no step ever opens a window.
 */
function ops(rt: FakeServingRuntime, over: Partial<BootstrapperOps> = {}): BootstrapperOps {
  const checked = async <T>(write: () => Promise<T>): Promise<T> => {
    const before = rt.callsSucceed();
    const answer = await write();
    if (before)
      assert.ok(rt.callsSucceed(), `admission calls fail after the write ${rt.writes.at(-1) ?? ''}`);
    return answer;
  };
  return unusedOps({
    readServing: () => Promise.resolve(rt.view()),
    readForeignServers: () => rt.foreignServers(),
    writeServingSecret: (current: V1Secret | undefined, write: SecretWrite) =>
      checked(() => rt.writeSecret(current, write)),
    writeCaBundle: (view: ServingView, pem: string) => checked(() => rt.writeBundle(view, pem)),
    readWebhookReport: () => Promise.resolve({}),
    ...over,
  });
}

const END: StateFn = () => Promise.resolve({});

/** One reconcile through the state alone (then an end that requeues `endRequeueMs`, if given). */
async function pass(
  rt: FakeServingRuntime,
  o: { ops?: BootstrapperOps; endRequeueMs?: number } = {},
): Promise<{ outcome: Outcome; status: ReturnType<StatusBuilder['build']>; ctx: StateContext }> {
  const rb: RuntimeBootstrapper = {
    metadata: { name: 'rt', namespace: 'kcp-system', generation: 1 },
    spec: { runtimeID: 'rt' },
  };
  const status = new StatusBuilder(rb, new Date(rt.now));
  const ctx = stateContext({
    rb,
    set: { ok: false, reason: 'not used here' },
    ops: o.ops ?? ops(rt),
    status,
    serving: rt.settings(),
  });
  const end: StateFn =
    o.endRequeueMs === undefined ? END : () => Promise.resolve({ requeueAfterMs: o.endRequeueMs });
  const { outcome } = await runStateMachine(servingCertificateState(end), ctx, endOfWork);
  return { outcome, status: status.build(), ctx };
}

const condition = (s: ReturnType<StatusBuilder['build']>) =>
  s.conditions?.find((c) => c.type === 'ServingCertificate');
const fingerprints = (pem: string | undefined) =>
  parseCertificates(pem).certificates.map((c) => c.fingerprint);
const kcpFingerprint = () => fingerprints(kcpCa.certPem)[0];

describe('what a wait of the protocol means for a runtime', () => {
  test('a step due later: Rotating, reconciled at its deadline', () => {
    assert.deepEqual(waitOutcome(wait(START + 20_000, true), START, P), {
      reason: 'Rotating',
      message: 'r',
      requeueAfterMs: 20_000,
    });
  });

  test('nothing due: Current, reconciled at the next deadline', () => {
    assert.deepEqual(waitOutcome(wait(START + 60_000, false), START, P), {
      reason: 'Current',
      message: 'r',
      requeueAfterMs: 60_000,
    });
  });

  test('a deadline months away is looked at within the hour (timers hold at most 24.8 days)', () => {
    assert.equal(waitOutcome(wait(START + 45 * DAY, false), START, P).requeueAfterMs, MAX_SERVING_WAIT_MS);
  });

  test('a deadline already passed: at once, never a negative delay', () => {
    assert.equal(waitOutcome(wait(START - 5, true), START, P).requeueAfterMs, 1);
    assert.equal(waitOutcome(wait(START, false), START, P).requeueAfterMs, 1);
  });

  test('pending without a deadline (a change by someone else): again after the settle time', () => {
    assert.equal(waitOutcome(wait(undefined, true), START, P).requeueAfterMs, P.settleMs);
  });

  test('nothing pending and no deadline: within the hour', () => {
    assert.equal(waitOutcome(wait(undefined, false), START, P).requeueAfterMs, MAX_SERVING_WAIT_MS);
  });
});

describe("the KCP's next step on a runtime", () => {
  test('a fresh runtime: the KCP’s CA into ca.crt, never a CA of its own, never a ca.key', async () => {
    const rt = new FakeServingRuntime(kcpCa);
    const step = nextServingStep(rt.view(), rt.settings());
    assert.equal(step.kind, 'write-secret');
    assert.equal(step.write.createCa, undefined);
    assert.deepEqual(fingerprints(step.write.caCerts.join('')), [kcpFingerprint()]);
    await rt.writeSecret(undefined, step.write);
    assert.equal(readServingSecret(rt.secret)?.caKey, undefined);
  });

  test('the validating configuration counts: its caBundle is written too', async () => {
    const rt = new FakeServingRuntime(kcpCa);
    rt.register([MWC, VWC]);
    const result = await pass(rt);
    assert.equal(result.outcome.error, undefined);
    assert.equal(rt.bundles().length, 2);
    for (const b of rt.bundles()) assert.deepEqual(fingerprints(b), [kcpFingerprint()]);
  });

  test('an unusable CA of the KCP is refused, naming why; the runtime is not touched', async () => {
    const expired = await createCertificateAuthority({
      commonName: 'old',
      validityMs: 1000,
      now: new Date(START - DAY),
    });
    const rt = new FakeServingRuntime(expired);
    assert.throws(() => nextServingStep(rt.view(), rt.settings()), ServingIssuerError);
    const { outcome, status } = await pass(rt);
    assert.ok(outcome.error instanceof ServingIssuerError);
    assert.equal(status.state, 'Error');
    assert.equal(condition(status)?.status, 'False');
    assert.equal(condition(status)?.reason, 'IssuerUnusable');
    assert.match(condition(status)?.message ?? '', /expired/);
    assert.deepEqual(rt.writes, []);
  });
});

describe('what the runtime holds after the registration', () => {
  const config = (kind: string, name: string, rv: string) =>
    ({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind,
      metadata: { name, resourceVersion: rv },
    }) as const;
  const known: ServingView = {
    secret: { metadata: { name: 's', resourceVersion: '1' } },
    mutating: config('MutatingWebhookConfiguration', MUTATING_WEBHOOK_CONFIGURATION, '2'),
    validating: config('ValidatingWebhookConfiguration', 'v', '3'),
    foreignServers: false,
  };

  test('our configurations among the answers, by kind and name', () => {
    const answers = registrationAnswers([
      config('MutatingWebhookConfiguration', 'someone-else', '8'),
      config('MutatingWebhookConfiguration', MUTATING_WEBHOOK_CONFIGURATION, '9'),
      { apiVersion: 'v1', kind: 'Service', metadata: { name: MUTATING_WEBHOOK_CONFIGURATION } },
    ]);
    assert.equal(answers.mutating?.metadata?.resourceVersion, '9');
    assert.equal(answers.validating, undefined, 'not applied');
  });

  test('the applied configuration as answered, the rest and the Secret as known; no look at other Pods', () => {
    const mutating = config('MutatingWebhookConfiguration', MUTATING_WEBHOOK_CONFIGURATION, '9');
    assert.deepEqual(afterRegistration(known, { mutating, validating: undefined }), {
      secret: known.secret,
      mutating,
      validating: known.validating,
    });
  });

  test('nothing known in this pass: the next serving look reads', () => {
    assert.equal(
      afterRegistration(undefined, { mutating: known.mutating, validating: undefined }),
      undefined,
    );
  });
});

describe('the serving-certificate state', () => {
  test('a takeover of a KIM install: trust first, the certificate after the settle time, the old CA after the overlap', async () => {
    const rt = await kimInstalled();
    const ownCa = fingerprints(readServingSecret(rt.secret)?.caCrt);
    assert.equal(ownCa.length, 1);

    // Pass 1: the KCP's CA into ca.crt, then every caBundle, then since when; the old certificate stays.
    const first = await pass(rt);
    assert.deepEqual(rt.writes, ['secret', 'bundle', 'secret']);
    assert.deepEqual(fingerprints(rt.bundles()[0]), [...ownCa, kcpFingerprint()]);
    assert.equal(condition(first.status)?.reason, 'Rotating');
    assert.match(condition(first.status)?.message ?? '', /waiting for the API server to load the signing CA/);
    assert.deepEqual(first.outcome, { requeueAfterMs: P.settleMs });

    // Too early: nothing written.
    rt.now += P.settleMs - 1;
    await pass(rt);
    assert.equal(rt.writes.length, 3);

    // Pass 2, after the settle time: the certificate from the KCP's CA; the old CA stays for the overlap.
    rt.now += 1;
    const second = await pass(rt);
    assert.deepEqual(rt.writes.slice(3), ['secret']);
    const leaf = parseCertificates(readServingSecret(rt.secret)?.tlsCrt).certificates[0];
    assert.ok(leaf && issuedBy(leaf, parseCertificates(kcpCa.certPem).certificates[0]!));
    assert.equal(condition(second.status)?.reason, 'Current');
    assert.deepEqual(second.outcome, { requeueAfterMs: P.overlapMs });

    // Pass 3, after the overlap: the old CA and its key leave ca.crt, then the caBundles.
    rt.now += P.overlapMs;
    const third = await pass(rt);
    assert.deepEqual(rt.writes.slice(4), ['secret', 'bundle']);
    const content = readServingSecret(rt.secret);
    assert.deepEqual(fingerprints(content?.caCrt), [kcpFingerprint()]);
    assert.equal(content?.caKey, undefined, "the webhook's CA key is gone");
    assert.deepEqual(fingerprints(rt.bundles()[0]), [kcpFingerprint()]);
    assert.equal(condition(third.status)?.reason, 'Current');
    assert.equal(third.outcome.requeueAfterMs, MAX_SERVING_WAIT_MS);
  });

  test('a takeover of an upstream install: its CA stays in every caBundle while its Pods run, then leaves', async () => {
    const upstream = await createCertificateAuthority({ commonName: 'upstream', now: new Date(START - DAY) });
    const rt = new FakeServingRuntime(kcpCa);
    // Upstream's registration, its caBundle from cert-management; its Pods serve under that CA.
    rt.register([
      {
        ...MWC,
        webhooks: [
          {
            name: MUTATING_WEBHOOK_NAME,
            clientConfig: {
              service: { name: 's', namespace: 'kyma-system' },
              caBundle: Buffer.from(upstream.certPem).toString('base64'),
            },
          },
        ],
      } as KubernetesObject,
    ]);
    rt.foreignCaPem = upstream.certPem;
    assert.ok(rt.callsSucceed());
    const first = await pass(rt);
    assert.deepEqual(fingerprints(rt.bundles()[0]), [kcpFingerprint(), ...fingerprints(upstream.certPem)]);
    assert.ok(rt.serverLooks > 0, 'the Pods were looked at');
    assert.equal(condition(first.status)?.reason, 'Rotating');
    // Our certificate after the settle time; upstream's Pods still run: its CA stays, looked at again soon.
    for (let i = 0; i < 3; i++) {
      rt.now += P.settleMs;
      const p = await pass(rt);
      assert.equal(condition(p.status)?.reason, 'Rotating');
      assert.match(condition(p.status)?.message ?? '', /Pods we did not start/);
      assert.ok((p.outcome.requeueAfterMs ?? Infinity) <= P.settleMs);
    }
    assert.ok(fingerprints(rt.bundles()[0]).includes(fingerprints(upstream.certPem)[0]!));
    // The last upstream Pod is gone: its CA leaves at the next pass, and the look stops.
    rt.foreignCaPem = undefined;
    rt.now += P.settleMs;
    const done = await pass(rt);
    assert.deepEqual(fingerprints(rt.bundles()[0]), [kcpFingerprint()]);
    assert.equal(condition(done.status)?.reason, 'Current');
    const looks = rt.serverLooks;
    rt.now += P.settleMs;
    await pass(rt);
    assert.equal(rt.serverLooks, looks, 'at rest no Pods are read');
  });

  test('a rotation of the KCP’s CA goes through the same steps, without a window', async () => {
    const rt = new FakeServingRuntime(kcpCa);
    rt.register([MWC]);
    await pass(rt);
    rt.now += P.settleMs;
    await pass(rt);
    const first = fingerprints(readServingSecret(rt.secret)?.caCrt);
    rt.kcpCa = await createCertificateAuthority({ commonName: 'kcp 2', now: new Date(START - DAY) });
    const next = fingerprints(rt.kcpCa.certPem);
    await pass(rt);
    assert.deepEqual(fingerprints(rt.bundles()[0]), [...first, ...next], 'both trusted first');
    rt.now += P.settleMs;
    await pass(rt);
    rt.now += P.overlapMs;
    await pass(rt);
    assert.deepEqual(fingerprints(readServingSecret(rt.secret)?.caCrt), next);
    assert.deepEqual(fingerprints(rt.bundles()[0]), next);
  });

  test('a write someone else got in first (409): planned again from what is there, no error', async () => {
    const rt = await kimInstalled();
    rt.conflicts = 2;
    const { outcome, status } = await pass(rt);
    assert.equal(outcome.error, undefined);
    assert.deepEqual(rt.writes, ['secret', 'bundle', 'secret']);
    assert.equal(condition(status)?.reason, 'Rotating');
  });

  test('a step is planned from the answer of the write before it; after a 409, from a read', async () => {
    const count = async (conflicts: number): Promise<{ reads: number; writes: string[] }> => {
      const rt = await kimInstalled();
      rt.conflicts = conflicts;
      let reads = 0;
      const counting = ops(rt, {
        readServing: () => {
          reads += 1;
          return Promise.resolve(rt.view());
        },
      });
      await pass(rt, { ops: counting });
      return { reads, writes: rt.writes };
    };
    assert.deepEqual(await count(0), { reads: 1, writes: ['secret', 'bundle', 'secret'] });
    // Each 409 costs one read: the answer of a write that failed says nothing.
    assert.deepEqual(await count(2), { reads: 3, writes: ['secret', 'bundle', 'secret'] });
  });

  test('a writer that keeps undoing ours: at most a bounded number of writes, then the next pass', async () => {
    const rt = await kimInstalled();
    rt.conflicts = 1000;
    let attempts = 0;
    const counting = ops(rt, {
      writeServingSecret: async (current, write) => {
        attempts += 1;
        return await rt.writeSecret(current, write);
      },
    });
    const { outcome, status } = await pass(rt, { ops: counting });
    assert.equal(attempts, MAX_SERVING_WRITES);
    assert.equal(outcome.error, undefined);
    assert.deepEqual(outcome, { requeueAfterMs: 1_000 });
    assert.match(condition(status)?.message ?? '', /continuing in the next/);
  });

  test('a failed write: Error, the step named, a retry with backoff', async () => {
    const rt = new FakeServingRuntime(kcpCa);
    const failing = ops(rt, { writeServingSecret: () => Promise.reject(new Error('forbidden\nmore')) });
    const { outcome, status } = await pass(rt, { ops: failing });
    assert.match(outcome.error?.message ?? '', /forbidden/);
    assert.equal(status.state, 'Error');
    assert.equal(condition(status)?.status, 'False');
    assert.equal(condition(status)?.reason, 'WriteFailed');
    assert.match(condition(status)?.message ?? '', /^adding the CA of the issuer.*: forbidden$/);
  });

  test('a failed read: Error, ReadFailed', async () => {
    const rt = new FakeServingRuntime(kcpCa);
    const failing = ops(rt, { readServing: () => Promise.reject(new Error('timeout')) });
    const { outcome, status } = await pass(rt, { ops: failing });
    assert.ok(outcome.error);
    assert.equal(condition(status)?.reason, 'ReadFailed');
  });
});

describe('the machine ends with the earliest requeue', () => {
  test('the protocol’s deadline wins over a later one, a sooner one wins over it; an error keeps its backoff', async () => {
    const rt = new FakeServingRuntime(kcpCa);
    rt.register([MWC]);
    const first = await pass(rt);
    assert.deepEqual(first.outcome, { requeueAfterMs: P.settleMs });
    rt.now += 1_000;
    const later = await pass(rt, { endRequeueMs: 60_000 });
    assert.deepEqual(later.outcome, { requeueAfterMs: P.settleMs - 1_000 });
    const sooner = await pass(rt, { endRequeueMs: 5 });
    assert.deepEqual(sooner.outcome, { requeueAfterMs: 5 });
    const fails: StateFn = () => Promise.resolve({ error: new Error('x') });
    const failing: StateFn = (_ctx, found) => Promise.resolve(goTo(fails, { ...found, wakeAfterMs: 10 }));
    const { ctx } = await pass(rt);
    assert.deepEqual(Object.keys((await runStateMachine(failing, ctx, endOfWork)).outcome), ['error']);
  });
});
