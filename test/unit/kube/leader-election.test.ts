import { KubeConfig } from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { LeaderElector } from '../../../src/kube/leader-election.js';
import { LeaderElectionConfigError } from '../../../src/kube/leader-election-timing.js';
import {
  decideLease,
  leaseRecordOf,
  nextLeaseSpec,
  type LeaseObservation,
} from '../../../src/kube/lease-decision.js';
import { silentLogger } from '../../../src/telemetry/logger.js';

const obs = (over: Partial<LeaseObservation>): LeaseObservation => ({
  identity: 'me',
  record: { holderIdentity: 'other', leaseDurationSeconds: 15, leaseTransitions: 3 },
  observedAtMs: 1_000,
  nowMs: 1_000,
  defaultLeaseDurationMs: 15_000,
  ...over,
});

describe('the lease decision', () => {
  test('no Lease: create it', () => {
    assert.deepEqual(decideLease(obs({ record: undefined })), { kind: 'create' });
  });

  test('our own Lease: renew', () => {
    assert.deepEqual(
      decideLease(obs({ record: { holderIdentity: 'me', leaseDurationSeconds: 15, leaseTransitions: 0 } })),
      { kind: 'renew' },
    );
  });

  test('a released Lease is free at once', () => {
    assert.deepEqual(
      decideLease(obs({ record: { holderIdentity: '', leaseDurationSeconds: 1, leaseTransitions: 4 } })),
      { kind: 'acquire' },
    );
  });

  test("another holder's Lease is waited for until it was seen unchanged for its own duration", () => {
    assert.deepEqual(decideLease(obs({ nowMs: 1_000 })), {
      kind: 'wait',
      holder: 'other',
      expiresInMs: 15_000,
    });
    assert.deepEqual(decideLease(obs({ nowMs: 15_999 })), { kind: 'wait', holder: 'other', expiresInMs: 1 });
    assert.deepEqual(decideLease(obs({ nowMs: 16_000 })), { kind: 'acquire' });
    // The holder's declared duration counts, not ours.
    const short = { holderIdentity: 'other', leaseDurationSeconds: 2, leaseTransitions: 0 };
    assert.deepEqual(decideLease(obs({ record: short, nowMs: 3_000 })), { kind: 'acquire' });
    // Without a declared duration, ours.
    const none = { holderIdentity: 'other', leaseDurationSeconds: 0, leaseTransitions: 0 };
    assert.equal(decideLease(obs({ record: none, nowMs: 15_999 })).kind, 'wait');
  });

  test('the next record: acquiring counts a transition and restarts acquireTime; renewing keeps both', () => {
    const now = new Date('2026-01-01T00:00:10Z');
    const current = {
      holderIdentity: 'me',
      leaseDurationSeconds: 15,
      acquireTime: new Date('2026-01-01T00:00:00Z'),
      renewTime: new Date('2026-01-01T00:00:08Z'),
      leaseTransitions: 2,
    };
    const renewed = nextLeaseSpec('renew', 'me', current, now, 15);
    assert.equal(renewed.leaseTransitions, 2);
    assert.equal(renewed.acquireTime, current.acquireTime);
    assert.equal(new Date(renewed.renewTime!).getTime(), now.getTime());
    const acquired = nextLeaseSpec('acquire', 'me', { ...current, holderIdentity: 'other' }, now, 15);
    assert.equal(acquired.leaseTransitions, 3);
    assert.equal(new Date(acquired.acquireTime!).getTime(), now.getTime());
    assert.equal(acquired.holderIdentity, 'me');
    const created = nextLeaseSpec('create', 'me', undefined, now, 15);
    assert.equal(created.leaseTransitions, 0);
    assert.equal(created.leaseDurationSeconds, 15);
    // Kubernetes MicroTime: six fractional digits.
    assert.match(JSON.stringify(created.renewTime), /\.\d{6}Z"$/);
  });

  test('a Lease without a spec reads as released', () => {
    assert.deepEqual(leaseRecordOf({ metadata: { name: 'l' } }), {
      holderIdentity: '',
      leaseDurationSeconds: 0,
      leaseTransitions: 0,
    });
  });

  test('unsafe timing is refused: the renew deadline must end before the lease can expire', () => {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: 'c', server: 'https://127.0.0.1:1', skipTLSVerify: false }],
      users: [{ name: 'u' }],
      contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
      currentContext: 'x',
    });
    const base = { kubeConfig: kc, namespace: 'ns', name: 'l', identity: 'me', logger: silentLogger() };
    assert.throws(
      () => new LeaderElector({ ...base, timing: { leaseDurationMs: 10_000, renewDeadlineMs: 10_000 } }),
      LeaderElectionConfigError,
    );
    assert.throws(
      () => new LeaderElector({ ...base, timing: { renewDeadlineMs: 2_000, retryPeriodMs: 2_000 } }),
      LeaderElectionConfigError,
    );
    assert.throws(() => new LeaderElector({ ...base, identity: '' }), LeaderElectionConfigError);
    const ok = new LeaderElector(base);
    assert.equal(ok.isLeader(), false, 'not a leader before it ran');
  });
});
