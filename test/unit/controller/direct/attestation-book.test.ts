import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import type { AttestedObject } from '../../../../src/api/attestation.js';
import { AttestationBook, MAX_OPEN_CHALLENGES } from '../../../../src/controller/direct/attestation-book.js';

const obj = (name: string, resourceVersion: string, namespace = 'kyma-system'): AttestedObject => ({
  apiVersion: 'v1',
  kind: 'Secret',
  namespace,
  name,
  resourceVersion,
});
const refsOf = (objects: readonly AttestedObject[]) =>
  objects.map(({ apiVersion, kind, namespace, name }) => ({ apiVersion, kind, namespace, name }));

/** Attests as a runtime's attestor does: echoing the challenge of its previous answer. */
function attestor(book: AttestationBook, key: string) {
  let challenge: string | undefined;
  return (objects: readonly AttestedObject[], at: number) => {
    const result = book.attest(key, { objects, challenge }, at);
    challenge = result.answer.challenge;
    return result;
  };
}

/** A runtime's managed objects: two Secrets and a Namespace. */
const full = [obj('a', '1'), obj('b', '2'), { ...obj('ns', '3', ''), kind: 'Namespace' }];

/** A book whose complete record of `full` the runtime attested in sync at 1 s (asked at 0.5 s). */
function attestedInSync() {
  const book = new AttestationBook(420);
  book.passEnded('k', { observed: full, complete: true });
  const attest = attestor(book, 'k');
  attest([], 500);
  attest(full, 1_000);
  return { book, attest };
}

describe('AttestationBook', () => {
  test('without a complete record: no refs to check and never in sync', () => {
    const book = new AttestationBook(420);
    book.passEnded('k', { observed: full, complete: false });
    const { verdict, answer } = book.attest('k', { objects: full }, 1_000);
    assert.equal(verdict, 'unrecorded');
    assert.deepEqual(
      { ...answer, challenge: undefined },
      {
        inSync: false,
        check: [],
        nextAfterSeconds: 420,
        challenge: undefined,
      },
    );
    assert.match(answer.challenge ?? '', /^[A-Za-z0-9_-]{22}$/);
    assert.equal(book.inSync('k', 0), false);
  });

  test('a complete record: the answer lists its refs; matching resourceVersions are in sync', () => {
    const book = new AttestationBook(420);
    book.passEnded('k', { observed: full, complete: true });
    const attest = attestor(book, 'k');
    const first = attest([], 1_000);
    assert.equal(first.verdict, 'initial', 'an empty attestation asks for the list and says nothing');
    assert.deepEqual(first.answer.check, refsOf(full));
    assert.equal(first.answer.inSync, false);
    assert.equal(attest([...full].reverse(), 2_000).verdict, 'in_sync');
    assert.equal(book.inSync('k', 2_000), true);
    assert.equal(book.inSync('k', 2_001), false, 'an attestation older than the period does not count');
  });

  test('a restarted replica’s empty attestation leaves the other replica’s word standing', () => {
    const { book, attest } = attestedInSync();
    assert.equal(book.attest('k', { objects: [] }, 2_000).verdict, 'initial');
    assert.equal(book.inSync('k', 1_000), true);
    assert.equal(attest([obj('a', '9'), ...full.slice(1)], 3_000).verdict, 'out_of_sync');
    assert.equal(book.attest('k', { objects: [] }, 4_000).verdict, 'initial');
    assert.equal(book.inSync('k', 0), false, 'nor does it undo an attestation out of sync');
  });

  test('a changed, missing or extra object is out of sync', () => {
    const book = new AttestationBook(420);
    book.passEnded('k', { observed: full, complete: true });
    assert.equal(book.attest('k', { objects: [obj('a', '9'), ...full.slice(1)] }, 1).verdict, 'out_of_sync');
    assert.equal(book.attest('k', { objects: full.slice(1) }, 1).verdict, 'out_of_sync');
    assert.equal(book.attest('k', { objects: [...full, obj('z', '1')] }, 1).verdict, 'out_of_sync');
    assert.equal(book.inSync('k', 0), false);
  });

  test('our own later write (merged) makes an earlier matching attestation stale', () => {
    const { book, attest } = attestedInSync();
    assert.equal(book.inSync('k', 0), true);
    book.passEnded('k', { observed: [obj('a', '5')], complete: false });
    assert.equal(book.inSync('k', 0), false, 'the runtime has not attested our new write yet');
    const next = [obj('a', '5'), ...full.slice(1)];
    assert.equal(attest(next, 2_000).verdict, 'in_sync', 'merged, still complete');
  });

  test('a complete pass replaces the record: objects no longer managed drop out', () => {
    const book = new AttestationBook(420);
    book.passEnded('k', { observed: [...full, obj('old', '1')], complete: true });
    book.passEnded('k', { observed: full, complete: true });
    assert.deepEqual(book.attest('k', { objects: full }, 1).answer.check, refsOf(full));
  });

  test('forget drops the record; runtimes are independent', () => {
    const book = new AttestationBook(420);
    book.passEnded('k', { observed: full, complete: true });
    book.passEnded('j', { observed: full, complete: true });
    const k = attestor(book, 'k');
    const j = attestor(book, 'j');
    k([], 0);
    j([], 0);
    k(full, 1);
    j(full, 1);
    book.forget('k');
    assert.equal(book.inSync('k', 0), false);
    assert.equal(book.inSync('j', 0), true);
    assert.equal(book.attest('k', { objects: full }, 2).verdict, 'unrecorded');
  });

  test('only a challenge of this round or the previous one lets a runtime be skipped', () => {
    const book = new AttestationBook(420);
    book.passEnded('k', { observed: full, complete: true });
    book.passEnded('j', { observed: full, complete: true });
    const attest = attestor(book, 'k');
    attest([], 0);

    assert.equal(
      book.attest('k', { objects: full }, 1).verdict,
      'stale',
      'no challenge: a release before them',
    );
    assert.equal(book.inSync('k', 0), false);
    assert.equal(book.attest('k', { objects: full, challenge: 'A'.repeat(22) }, 1).verdict, 'stale');
    const forJ = book.attest('j', { objects: [] }, 1).answer.challenge;
    assert.equal(
      book.attest('k', { objects: full, challenge: forJ }, 1).verdict,
      'stale',
      "another runtime's",
    );
    assert.equal(book.inSync('k', 0), false);

    // A recording of an attestation with its challenge, sent once and replayed later: the
    // challenge counts once, so the replay skips nothing, in this round or any later one.
    const recorded = { objects: full, challenge: attest(full, 2).answer.challenge };
    assert.equal(book.attest('k', recorded, 3).verdict, 'in_sync');
    assert.equal(book.inSync('k', 0), true, 'the attestation itself counts');
    assert.equal(book.attest('k', recorded, 4).verdict, 'stale', 'replayed at once');
    assert.equal(book.inSync('k', 0), false, 'the replay undoes the skip: the tick re-applies');
    book.nextRound();
    assert.equal(book.attest('k', recorded, 5).verdict, 'stale', 'replayed a round later');
    assert.equal(book.inSync('k', 0), false);

    // The attestor's own challenge was taken by the recording; once answered anew, echoing each
    // answer's challenge keeps it in sync round after round.
    assert.equal(attest(full, 9).verdict, 'stale');
    for (let round = 0; round < 5; round++) {
      assert.equal(attest(full, 10 + round).verdict, 'in_sync');
      assert.equal(book.inSync('k', 0), true);
      book.nextRound();
    }
    attest(full, 20);
    book.nextRound();
    book.nextRound();
    assert.equal(book.inSync('k', 0), false, 'an attestation kept from two rounds ago counts no more');
  });

  test('a challenge is open until taken, in its round and the next, for its runtime alone', () => {
    const book = new AttestationBook(420);
    book.passEnded('k', { observed: full, complete: true });
    const first = book.attest('k', { objects: [] }, 0).answer.challenge;
    // Another replica's first attestation (empty) gets its own challenge; the first stays open.
    const other = book.attest('k', { objects: [] }, 0).answer.challenge;
    assert.notEqual(first, other);
    assert.equal(book.attest('k', { objects: full, challenge: first }, 1).verdict, 'in_sync');
    assert.equal(book.attest('k', { objects: full, challenge: other }, 1).verdict, 'in_sync');
    assert.equal(book.attest('k', { objects: full, challenge: first }, 1).verdict, 'stale', 'taken');

    // Issued in round 0: counts in round 1, not in round 2.
    const late = book.attest('k', { objects: [] }, 2).answer.challenge;
    const later = book.attest('k', { objects: [] }, 2).answer.challenge;
    book.nextRound();
    assert.equal(book.attest('k', { objects: full, challenge: late }, 3).verdict, 'in_sync');
    book.nextRound();
    assert.equal(book.attest('k', { objects: full, challenge: later }, 4).verdict, 'stale');

    // At most MAX_OPEN_CHALLENGES open: the oldest is dropped.
    const issued = Array.from(
      { length: MAX_OPEN_CHALLENGES + 1 },
      () => book.attest('k', { objects: [] }, 5).answer.challenge,
    );
    assert.equal(book.attest('k', { objects: full, challenge: issued[1] }, 6).verdict, 'in_sync');
    assert.equal(book.attest('k', { objects: full, challenge: issued[0] }, 6).verdict, 'stale');
  });
});
