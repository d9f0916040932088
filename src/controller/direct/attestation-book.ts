/**
 * What the KCP knows of each runtime's managed objects (docs/attestation.md): the resourceVersions
 * its own writes and reads left, and the runtime's latest attestation of them. No I/O: the
 * reconciler feeds it after each pass, the drift listener with each attestation, and the
 * periodic resync asks it which runtimes it may leave alone.
 *
 * Each answer carries a challenge: a nonce drawn for that answer, which the runtime echoes in its
 * next attestation. A challenge counts once, and only in the round (resync period) it was issued
 * in or the next: an attestation echoing one lets the runtime be skipped, and its content was
 * read after the challenge was issued. A recorded attestation replayed echoes a challenge already
 * taken, so it is stale and skips nothing.
 */
import { randomBytes } from 'node:crypto';
import {
  versionsDigest,
  type Attestation,
  type AttestationAnswer,
  type AttestedObject,
  type ManagedRef,
  refKey,
} from '../../api/attestation.js';

/** How a pass ended, for the record. */
export interface PassRecord {
  /** Objects the pass wrote or read, with the resourceVersion the API server answered, in order. */
  readonly observed: readonly AttestedObject[];
  /**
   * The pass wrote every managed object and read back what others write (a forced pass that
   * ended Ready): the record is replaced and complete. Otherwise what it saw is merged in.
   */
  readonly complete: boolean;
}

/**
 * The verdict on an attestation; `initial`: it lists nothing (a webhook's first after its start,
 * asking for the list), which says nothing about the runtime; `stale`: it matches, but echoes no
 * challenge issued to this runtime in this round or the previous one and not taken yet (a replay,
 * or an answer lost on the way), so it lets nothing be skipped.
 */
export type AttestationVerdict = 'in_sync' | 'out_of_sync' | 'unrecorded' | 'initial' | 'stale';

interface Entry {
  /** refKey (interned) → resourceVersion: about 20 per runtime, so no object per entry. */
  versions: Map<string, string>;
  complete: boolean;
  digest: string | undefined;
  /** The latest non-empty attestation: its digest, when it came, the round its challenge is of. */
  attested: { digest: string; at: number; round: number | undefined } | undefined;
  /** Challenges issued and not taken yet, oldest first (at most {@link MAX_OPEN_CHALLENGES}). */
  challenges: { value: string; round: number }[];
}

/**
 * Challenges open per runtime: one per attestor (the Lease holder's, and a replica's first after
 * its start, or every replica's with `--no-trust-restart`); the oldest is dropped past this.
 */
export const MAX_OPEN_CHALLENGES = 4;

/** Per-runtime record of managed objects' resourceVersions and the latest attestation. */
export class AttestationBook {
  private readonly entries = new Map<string, Entry>();
  /** Every runtime manages the same few objects: their keys and refs are held once. */
  private readonly refs = new Map<string, { readonly key: string; readonly ref: ManagedRef }>();

  private round = 0;

  /** @param nextAfterSeconds how long runtimes wait between attestations (told in every answer). */
  constructor(private readonly nextAfterSeconds: number) {}

  /** Starts the next round: the periodic resync calls it after each tick. */
  nextRound(): void {
    this.round += 1;
  }

  /** Records what a pass of `key` saw. */
  passEnded(key: string, pass: PassRecord): void {
    const entry = this.entries.get(key) ?? this.fresh(key);
    if (pass.complete) entry.versions = new Map();
    for (const o of pass.observed) entry.versions.set(this.intern(o), o.resourceVersion);
    if (pass.complete) entry.complete = true;
    if (pass.observed.length > 0 || pass.complete) entry.digest = undefined;
  }

  /** Forgets `key` (its CR is gone, or another replica works it now). */
  forget(key: string): void {
    this.entries.delete(key);
  }

  /** Answers an attestation of `key` received at `at` (epoch ms), and keeps it for the resync. */
  attest(
    key: string,
    attestation: Attestation,
    at: number,
  ): { verdict: AttestationVerdict; answer: AttestationAnswer; differing: readonly Difference[] } {
    const entry = this.entries.get(key) ?? this.fresh(key);
    // An empty attestation keeps the last one: a webhook restarting must not undo its replica's word.
    const initial = attestation.objects.length === 0;
    const digest = versionsDigest(attestation.objects);
    const round = this.take(entry, attestation.challenge);
    if (!initial) entry.attested = { digest, at, round };
    const verdict: AttestationVerdict = initial
      ? 'initial'
      : !entry.complete
        ? 'unrecorded'
        : digest !== this.digestOf(entry)
          ? 'out_of_sync'
          : round === undefined
            ? 'stale'
            : 'in_sync';
    return {
      verdict,
      differing: verdict === 'out_of_sync' ? differences(entry.versions, attestation) : [],
      answer: {
        inSync: verdict === 'in_sync',
        check: entry.complete ? [...entry.versions.keys()].map((k) => this.refOf(k)) : [],
        nextAfterSeconds: this.nextAfterSeconds,
        challenge: this.issue(entry),
      },
    };
  }

  /**
   * Whether `key`'s runtime attested, at `since` (epoch ms) or later and echoing a challenge of
   * this round or the previous one, exactly the resourceVersions of a complete record as it is
   * now: nothing was written there since our last write or read.
   */
  inSync(key: string, since: number): boolean {
    const entry = this.entries.get(key);
    const attested = entry?.attested;
    if (!entry?.complete || attested === undefined || attested.at < since) return false;
    if (attested.round === undefined || attested.round < this.round - 1) return false;
    return attested.digest === this.digestOf(entry);
  }

  /** Runtimes with a record (a gauge). */
  get size(): number {
    return this.entries.size;
  }

  /**
   * Takes the challenge if it is open for this runtime and of this round or the previous one:
   * resolves its round; undefined for any other (none, taken, too old, another runtime's).
   */
  private take(entry: Entry, challenge: string | undefined): number | undefined {
    if (challenge === undefined) return undefined;
    const i = entry.challenges.findIndex((c) => c.value === challenge);
    const open = entry.challenges[i];
    if (open === undefined) return undefined;
    entry.challenges.splice(i, 1);
    return open.round >= this.round - 1 ? open.round : undefined;
  }

  /** A new challenge for the runtime, open until taken (or dropped, the oldest, past the bound). */
  private issue(entry: Entry): string {
    // 128 bits: unguessable; the runtime can only echo what it was given.
    const value = randomBytes(16).toString('base64url');
    entry.challenges.push({ value, round: this.round });
    if (entry.challenges.length > MAX_OPEN_CHALLENGES) entry.challenges.shift();
    return value;
  }

  private fresh(key: string): Entry {
    const entry: Entry = {
      versions: new Map(),
      complete: false,
      digest: undefined,
      attested: undefined,
      challenges: [],
    };
    this.entries.set(key, entry);
    return entry;
  }

  /** The shared key of a ref (one string for all runtimes, not one per runtime). */
  private intern(o: ManagedRef): string {
    const key = refKey(o);
    const known = this.refs.get(key);
    if (known) return known.key;
    this.refs.set(key, {
      key,
      ref: { apiVersion: o.apiVersion, kind: o.kind, namespace: o.namespace, name: o.name },
    });
    return key;
  }

  private refOf(key: string): ManagedRef {
    return this.refs.get(key)?.ref ?? NO_REF;
  }

  private digestOf(entry: Entry): string {
    entry.digest ??= versionsDigest(
      [...entry.versions].map(([k, resourceVersion]) => ({ ...this.refOf(k), resourceVersion })),
    );
    return entry.digest;
  }
}

/** An object whose attested resourceVersion is not the recorded one ('': absent on that side). */
export interface Difference {
  readonly ref: string;
  readonly recorded: string;
  readonly attested: string;
}

/** At most this many differences are told: enough to say what changed, bounded for a log line. */
const MAX_DIFFERENCES = 5;

function differences(recorded: ReadonlyMap<string, string>, attestation: Attestation): Difference[] {
  const out: Difference[] = [];
  const attested = new Map(attestation.objects.map((o) => [refKey(o), o.resourceVersion]));
  for (const key of new Set([...recorded.keys(), ...attested.keys()])) {
    const r = recorded.get(key) ?? '';
    const a = attested.get(key) ?? '';
    if (r !== a) out.push({ ref: key, recorded: r, attested: a });
    if (out.length === MAX_DIFFERENCES) break;
  }
  return out;
}

const NO_REF: ManagedRef = { apiVersion: '', kind: '', namespace: '', name: '' };
