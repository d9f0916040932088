import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { hash53, rendezvousOwner, rendezvousWeight } from '../../../src/kube/rendezvous-hash.js';

const keys = (n: number): string[] => Array.from({ length: n }, (_, i) => `rt-${String(i).padStart(5, '0')}`);
const replicas = (n: number): string[] =>
  Array.from({ length: n }, (_, i) => `rt-bootstrapper-controller-7d9c-${i}_0b5e${i}`);

/** Every subset of `items`. */
function subsets<T>(items: readonly T[]): T[][] {
  return Array.from({ length: 2 ** items.length }, (_, mask) => items.filter((_, i) => (mask >> i) & 1));
}

describe('rendezvous hashing', () => {
  test('hash53 is a 53-bit integer that depends on the seed and every character', () => {
    const h = hash53('rt-00001');
    assert.ok(Number.isSafeInteger(h) && h >= 0);
    assert.equal(hash53('rt-00001'), h);
    assert.notEqual(hash53('rt-00002'), h);
    assert.notEqual(hash53('rt-00001', 1), h);
  });

  test('hash53 is cyrb53: the same values in every release, so replicas of two versions agree on owners', () => {
    // cyrb53's published value for "a"; the others pin the seed and the member/key separator.
    assert.equal(hash53('a'), 7929297801672961);
    assert.equal(hash53(''), 3338908027751811);
    assert.equal(hash53('rt-00001'), 4471586242801181);
    assert.equal(hash53('rt-00001', 7), 1088832370365546);
    assert.equal(rendezvousWeight('replica-0', 'rt-1'), 3086602100976679);
    assert.equal(rendezvousWeight('replica-0', 'rt-1'), hash53('replica-0\u0000rt-1'));
  });

  test('no members: no owner; one member: it owns everything', () => {
    assert.equal(rendezvousOwner('rt-1', []), undefined);
    for (const k of keys(100)) assert.equal(rendezvousOwner(k, ['only']), 'only');
  });

  test('deterministic: the order of the members never changes the owner', () => {
    const members = replicas(5);
    for (const k of keys(500)) {
      const owner = rendezvousOwner(k, members);
      assert.equal(rendezvousOwner(k, [...members].reverse()), owner);
      assert.equal(rendezvousOwner(k, [...members.slice(2), ...members.slice(0, 2)]), owner);
    }
  });

  test('balanced: with 2 to 10 members each gets its share of 20,000 keys within 5 %', () => {
    const all = keys(20_000);
    for (let n = 2; n <= 10; n++) {
      const members = replicas(n);
      const counts = new Map<string, number>(members.map((m) => [m, 0]));
      for (const k of all) {
        const owner = rendezvousOwner(k, members);
        assert.ok(owner !== undefined);
        counts.set(owner, (counts.get(owner) ?? 0) + 1);
      }
      const fair = all.length / n;
      for (const [m, c] of counts)
        assert.ok(Math.abs(c - fair) / fair < 0.05, `${n} members: ${m} got ${c} of ${all.length}`);
    }
  });

  test('minimal movement, exhaustively over every subset of 6 members: a key never moves between two members that stay', () => {
    // The property that makes joins and leaves cheap: if a key's owner in the larger set is also
    // in the smaller one, it owns the key there too. So a leave moves only the leaver's keys and
    // a join moves only keys to the joiner.
    const members = replicas(6);
    const sets = subsets(members).filter((s) => s.length > 0);
    for (const k of keys(300)) {
      const owners = new Map(sets.map((s) => [s.join(','), rendezvousOwner(k, s)]));
      for (const big of sets) {
        const owner = owners.get(big.join(','));
        assert.ok(owner !== undefined);
        for (const small of sets) {
          if (!small.every((m) => big.includes(m)) || !small.includes(owner)) continue;
          assert.equal(owners.get(small.join(',')), owner, `${k}: ${small.join(',')} ⊂ ${big.join(',')}`);
        }
      }
    }
  });

  test('a join moves about 1/(n+1) of the keys, all to the joiner; a leave moves exactly the leaver’s', () => {
    const all = keys(10_000);
    const three = replicas(3);
    const four = replicas(4);
    const joiner = four[3] ?? '';
    let moved = 0;
    for (const k of all) {
      const before = rendezvousOwner(k, three);
      const after = rendezvousOwner(k, four);
      if (before !== after) {
        moved++;
        assert.equal(after, joiner);
      }
    }
    assert.ok(Math.abs(moved / all.length - 1 / 4) < 0.02, `moved ${moved}`);
    const leaver = three[1] ?? '';
    const two = three.filter((m) => m !== leaver);
    for (const k of all) {
      const before = rendezvousOwner(k, three);
      if (before !== leaver) assert.equal(rendezvousOwner(k, two), before);
    }
  });
});
