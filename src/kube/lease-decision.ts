/**
 * The pure part of leader election (client-go's `tryAcquireOrRenew` decision): given the Lease
 * a candidate just read and when it first saw that version, decide whether to create, renew,
 * acquire or wait, and build the record to write. No I/O, no clock of its own.
 */
import type { V1Lease, V1LeaseSpec } from '@kubernetes/client-node';

/**
 * A Kubernetes `MicroTime`: serialised with six fractional digits, as the API server expects
 * (client-node's `V1MicroTime`, kept here so the election loads no client-node code).
 */
export class MicroTime extends Date {
  override toISOString(): string {
    return super.toISOString().slice(0, -1) + '000Z';
  }
}

/** The fields of a Lease's spec that the election reads. */
export interface LeaseRecord {
  /** '' when released or never held. */
  readonly holderIdentity: string;
  /** The holder's lease duration; 0 if unset. */
  readonly leaseDurationSeconds: number;
  readonly leaseTransitions: number;
}

/** What a candidate should do with the Lease it just read. */
export type LeaseDecision =
  | { readonly kind: 'create' }
  | { readonly kind: 'renew' }
  | { readonly kind: 'acquire' }
  | { readonly kind: 'wait'; readonly holder: string; readonly expiresInMs: number };

/** Input of {@link decideLease}. */
export interface LeaseObservation {
  readonly identity: string;
  /** undefined: no Lease object exists. */
  readonly record: LeaseRecord | undefined;
  /** Local monotonic ms when this record (this resourceVersion) was first observed. */
  readonly observedAtMs: number;
  readonly nowMs: number;
  /** Used when the record carries no duration. */
  readonly defaultLeaseDurationMs: number;
}

/** The pure decision of one election round (client-go's `tryAcquireOrRenew`). */
export function decideLease(o: LeaseObservation): LeaseDecision {
  if (o.record === undefined) return { kind: 'create' };
  const holder = o.record.holderIdentity;
  if (holder === o.identity) return { kind: 'renew' };
  const expiresAt = leaseExpiresAtMs(o.record, o.observedAtMs, o.defaultLeaseDurationMs);
  if (expiresAt !== undefined && o.nowMs < expiresAt)
    return { kind: 'wait', holder, expiresInMs: expiresAt - o.nowMs };
  return { kind: 'acquire' };
}

/**
 * When a Lease record seen at `observedAtMs` (local monotonic ms, when its resourceVersion was
 * first observed) expires for an observer; undefined when it is released (no holder). An
 * observer's own clock only, as client-go: no clock is compared across machines.
 */
export function leaseExpiresAtMs(
  record: LeaseRecord,
  observedAtMs: number,
  defaultLeaseDurationMs: number,
): number | undefined {
  if (record.holderIdentity === '') return undefined;
  const durationMs =
    record.leaseDurationSeconds > 0 ? record.leaseDurationSeconds * 1000 : defaultLeaseDurationMs;
  return observedAtMs + durationMs;
}

/** The Lease spec to write for a `create`, `renew` or `acquire` decision (pure). */
export function nextLeaseSpec(
  kind: 'create' | 'renew' | 'acquire',
  identity: string,
  current: V1LeaseSpec | undefined,
  now: Date,
  leaseDurationSeconds: number,
): V1LeaseSpec {
  const at = new MicroTime(now.getTime());
  const transitions = current?.leaseTransitions ?? 0;
  return {
    holderIdentity: identity,
    leaseDurationSeconds,
    acquireTime: kind === 'renew' && current?.acquireTime !== undefined ? current.acquireTime : at,
    renewTime: at,
    leaseTransitions: kind === 'acquire' ? transitions + 1 : transitions,
  };
}

/** The record of a Lease as the election reads it. */
export function leaseRecordOf(lease: V1Lease): LeaseRecord {
  return {
    holderIdentity: lease.spec?.holderIdentity ?? '',
    leaseDurationSeconds: lease.spec?.leaseDurationSeconds ?? 0,
    leaseTransitions: lease.spec?.leaseTransitions ?? 0,
  };
}

/** Input of {@link leaseHeld}: a holder's timing and when its last successful renewal was sent. */
export interface HeldLease {
  /** Local monotonic ms when the last renewal that succeeded was sent. */
  readonly renewedAtMs: number;
  readonly nowMs: number;
  readonly renewDeadlineMs: number;
  readonly leaseDurationMs: number;
  /** Time kept free before the Lease may expire for anyone else (a request on its way lands in it). */
  readonly marginMs: number;
}

/**
 * Whether a holder may still act at `nowMs` by its own clock (pure). Another candidate starts
 * counting the lease duration only when it observes a renewal, which is later than the holder
 * sent it, so the holder is safe until `renewedAt + leaseDuration`; it stops at the renew
 * deadline, or earlier if that leaves less than `marginMs` of the lease duration.
 */
export function leaseHeld(o: HeldLease): boolean {
  return o.nowMs < o.renewedAtMs + Math.min(o.renewDeadlineMs, o.leaseDurationMs - o.marginMs);
}
