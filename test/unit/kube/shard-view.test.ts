import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { hash53, rendezvousOwner } from '../../../src/kube/rendezvous-hash.js';
import { staleShardLease } from '../../../src/kube/shard-lease-gc.js';
import {
  decideShard,
  encodeShardView,
  liveMembers,
  nextExpiryMs,
  parseShardView,
  sameMembers,
  SHARD_VIEW_ANNOTATION,
  shardLeaseName,
  targetMembers,
  type MemberObservation,
  type ShardView,
} from '../../../src/kube/shard-view.js';

const view = (generation: number, ...members: string[]): ShardView => ({
  generation,
  members: [...members].sort(),
});
const seen = (holder: string, observedAtMs: number, v?: ShardView, seconds = 10): MemberObservation => ({
  record: { holderIdentity: holder, leaseDurationSeconds: seconds, leaseTransitions: 0 },
  observedAtMs,
  view: v,
});
/** A key `owner` owns among `members`. */
function keyOf(owner: string, members: readonly string[]): string {
  for (let i = 0; ; i++) if (rendezvousOwner(`rt-${i}`, members) === owner) return `rt-${i}`;
}

describe('shard views', () => {
  test('the annotation round-trips; anything unreadable is a claim of nothing', () => {
    // Replicas of two releases read each other's views: the name is part of the protocol.
    assert.equal(SHARD_VIEW_ANNOTATION, 'rt-bootstrapper.kyma-project.io/shard-view');
    const v = view(3, 'b', 'a');
    assert.deepEqual(parseShardView(encodeShardView(v)), v);
    assert.equal(parseShardView(undefined), undefined);
    assert.equal(parseShardView('{'), undefined);
    assert.equal(parseShardView('{"generation":"1","members":[]}'), undefined);
    assert.equal(parseShardView('{"generation":1,"members":"a"}'), undefined);
    assert.equal(parseShardView('{"generation":1}'), undefined);
    assert.equal(parseShardView('null'), undefined);
    assert.deepEqual(parseShardView('{"generation":1,"members":["b",2,"a"]}'), view(1, 'a', 'b'));
  });

  test('live members: by the observer’s clock, released and expired ones left out, self left out', () => {
    const obs = [
      seen('me', 0),
      seen('a', 1_000, view(1, 'a', 'me')),
      seen('b', 0),
      seen('', 5_000),
      seen('c', 9_000, undefined, 0),
    ];
    const live = liveMembers(obs, 'me', 10_500, 3_000);
    assert.deepEqual([...live.keys()].sort(), ['a', 'c']);
    assert.deepEqual(
      [...liveMembers([seen('me', 10_000), seen('a', 10_000)], 'me', 10_500, 3_000).keys()],
      ['a'],
    );
    assert.deepEqual(live.get('a'), view(1, 'a', 'me'));
    // 'a' expires at 11 000, 'c' (no duration: the default 3 s) at 12 000.
    assert.equal(nextExpiryMs(obs, 'me', 10_500, 3_000), 11_000);
    assert.deepEqual([...liveMembers(obs, 'me', 11_000, 3_000).keys()], ['c']);
  });

  test('the next expiry: the earliest still ahead, self and released Leases left out; none when nothing can expire', () => {
    const obs = [seen('me', 500), seen('a', 2_000), seen('b', 1_000), seen('', 0), seen('c', 0)];
    // me at 10 500 (its own), a at 12 000, b at 11 000, c at 10 000 (now: not ahead).
    assert.equal(nextExpiryMs(obs, 'me', 10_000, 3_000), 11_000);
    assert.equal(nextExpiryMs(obs, 'me', 11_000, 3_000), 12_000);
    assert.equal(nextExpiryMs(obs, 'me', 12_000, 3_000), undefined);
    assert.equal(nextExpiryMs([], 'me', 0, 3_000), undefined);
  });

  test('the target view is self and the live members, sorted', () => {
    assert.deepEqual(targetMembers('m', ['z', 'a', 'm']), ['a', 'm', 'z']);
    assert.ok(sameMembers(['a', 'b'], ['a', 'b']));
    assert.ok(!sameMembers(['a', 'b'], ['a']));
    assert.ok(!sameMembers(['a'], ['a', 'b']));
    assert.ok(sameMembers([], []));
    assert.ok(!sameMembers(['a', 'b'], ['a', 'c']));
  });

  test('no confirmed view: inactive', () => {
    assert.deepEqual(decideShard('rt-1', { self: 'me', view: undefined, others: new Map() }), {
      kind: 'inactive',
    });
  });

  test('another member’s key by our view: elsewhere; ours with no claim on it: work', () => {
    const members = ['a', 'me'];
    const theirs = keyOf('a', members);
    const ours = keyOf('me', members);
    const s = { self: 'me', view: view(2, ...members), others: new Map([['a', view(5, ...members)]]) };
    assert.deepEqual(decideShard(theirs, s), { kind: 'elsewhere', owner: 'a' });
    assert.deepEqual(decideShard(ours, s), { kind: 'work' });
  });

  test('a joiner waits while the previous owner’s published view still gives it the key', () => {
    // 'a' worked alone; 'me' joins. The key is mine in {a, me} but a's view {a} still claims it.
    const key = keyOf('me', ['a', 'me']);
    const waiting = { self: 'me', view: view(1, 'a', 'me'), others: new Map([['a', view(1, 'a')]]) };
    assert.deepEqual(decideShard(key, waiting), { kind: 'wait', claimant: 'a' });
    // Once 'a' published {a, me} (after it stopped working the key), it is mine.
    const handed = { ...waiting, others: new Map([['a', view(2, 'a', 'me')]]) };
    assert.deepEqual(decideShard(key, handed), { kind: 'work' });
    // A live member that published nothing yet claims nothing.
    assert.deepEqual(decideShard(key, { ...waiting, others: new Map([['a', undefined]]) }), { kind: 'work' });
  });

  test('moving to a new view: the keys it takes from us stop at once, the ones it gives wait for it', () => {
    const members = ['a', 'me'];
    const leaving = keyOf('a', [...members, 'b']);
    const staying = (() => {
      for (let i = 0; ; i++) {
        const k = `rt-${i}`;
        if (rendezvousOwner(k, members) === 'me' && rendezvousOwner(k, [...members, 'b']) === 'me') return k;
      }
    })();
    const s = { self: 'me', view: view(1, ...members), next: view(2, 'a', 'b', 'me'), others: new Map() };
    if (rendezvousOwner(leaving, members) === 'me')
      assert.deepEqual(decideShard(leaving, s), { kind: 'elsewhere', owner: 'a' });
    assert.deepEqual(decideShard(staying, s), { kind: 'work' });
  });

  test('a key the next view gives another member is not started, even while the current view gives it us', () => {
    const now = ['a', 'me'];
    const next = ['a', 'b', 'me'];
    const toB = (() => {
      for (let i = 0; ; i++) {
        const k = `rt-${i}`;
        if (rendezvousOwner(k, now) === 'me' && rendezvousOwner(k, next) === 'b') return k;
      }
    })();
    const s = { self: 'me', view: view(1, ...now), next: view(2, ...next), others: new Map() };
    assert.deepEqual(decideShard(toB, s), { kind: 'elsewhere', owner: 'b' });
    assert.deepEqual(decideShard(toB, { ...s, next: undefined }), { kind: 'work' });
    // An empty view (nobody, not even us) gives the key to nobody.
    assert.deepEqual(decideShard(toB, { self: 'me', view: view(1), others: new Map() }), {
      kind: 'elsewhere',
      owner: '',
    });
    assert.deepEqual(decideShard(toB, { ...s, next: view(3) }), { kind: 'elsewhere', owner: '' });
  });

  test('a member claims only the keys its own published view gives it, not those it gives others', () => {
    const members = ['a', 'b', 'me'];
    const key = (() => {
      for (let i = 0; ; i++) {
        const k = `rt-${i}`;
        if (rendezvousOwner(k, members) === 'me' && rendezvousOwner(k, ['a', 'b']) === 'b') return k;
      }
    })();
    // 'a' published {a, b}, which gives the key to b, who has not published: nobody claims it.
    const s = { self: 'me', view: view(2, ...members), others: new Map([['a', view(1, 'a', 'b')]]) };
    assert.deepEqual(decideShard(key, s), { kind: 'work' });
    const claimed = new Map([...s.others, ['b', view(1, 'a', 'b')]]);
    assert.deepEqual(decideShard(key, { ...s, others: claimed }), { kind: 'wait', claimant: 'b' });
  });

  test('exhaustively for three replicas: whatever views they published, no key is worked by two at once', () => {
    // Every published view of each replica is one containing itself (the protocol publishes
    // nothing else), and a replica works a key only under a view it published. Whatever mix
    // of published views, at most one replica decides 'work' for a key.
    const all = ['a', 'b', 'c'];
    const viewsOf = (self: string): ShardView[] =>
      [[], ['a'], ['b'], ['c'], ['a', 'b'], ['a', 'c'], ['b', 'c']]
        .map((others) => view(1, ...new Set([self, ...others])))
        .filter((v, i, arr) => arr.findIndex((w) => sameMembers(w.members, v.members)) === i);
    for (let k = 0; k < 200; k++) {
      const key = `rt-${k}`;
      for (const va of viewsOf('a'))
        for (const vb of viewsOf('b'))
          for (const vc of viewsOf('c')) {
            const published = new Map([
              ['a', va],
              ['b', vb],
              ['c', vc],
            ]);
            const working = all.filter((self) => {
              const others = new Map([...published].filter(([m]) => m !== self));
              return decideShard(key, { self, view: published.get(self), others }).kind === 'work';
            });
            assert.ok(working.length <= 1, `${key}: ${working.join(', ')}`);
          }
    }
  });

  test('lease names are valid object names, distinct for identities that read alike', () => {
    const a = shardLeaseName('rt-bootstrapper-controller-shard-', 'Controller-7d9c_0b5e8f2a-aaaa');
    const b = shardLeaseName('rt-bootstrapper-controller-shard-', 'controller-7d9c-0b5e8f2a-aaaa');
    for (const n of [a, b]) assert.match(n, /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/);
    assert.notEqual(a, b);
    assert.ok(shardLeaseName('p-', 'x'.repeat(300)).length < 63);
    assert.match(shardLeaseName('p-', '___'), /^p-[a-z0-9]+$/);
    // Lower case, each run of other characters one dash, none at either end, 40 at most.
    const tag = (identity: string) => hash53(identity).toString(36);
    assert.equal(shardLeaseName('p-', 'Controller__7d9c'), `p-controller-7d9c-${tag('Controller__7d9c')}`);
    assert.equal(shardLeaseName('p-', '--Ab--'), `p-ab-${tag('--Ab--')}`);
    assert.equal(shardLeaseName('p-', '___'), `p-${tag('___')}`);
    const long = `${'a'.repeat(39)}_b`;
    assert.equal(shardLeaseName('p-', long), `p-${'a'.repeat(39)}-${tag(long)}`);
    const dashes = `${'a'.repeat(38)}--b`;
    assert.equal(
      shardLeaseName('p-', dashes),
      `p-${'a'.repeat(38)}-${tag(dashes)}`,
      'cut inside a run of dashes',
    );
  });

  test('a shard Lease is stale two lease durations after it expired or was released', () => {
    // Held, 10 s, seen at 0: expires at 10 000, stale after 10 000 + 2 × 3 000.
    assert.ok(!staleShardLease(seen('a', 0), 16_000, 3_000));
    assert.ok(staleShardLease(seen('a', 0), 16_001, 3_000));
    // Released at 1 000: stale after 1 000 + 6 000.
    assert.ok(!staleShardLease(seen('', 1_000), 7_000, 3_000));
    assert.ok(staleShardLease(seen('', 1_000), 7_001, 3_000));
  });
});
