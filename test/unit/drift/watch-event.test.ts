import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  WATCH_EVENT_PATH,
  WatchEventError,
  encodeWatchEvent,
  parseWatchEvent,
  type WatchEvent,
} from '../../../src/drift/watch-event.js';

const example: WatchEvent = {
  watched: { Namespace: 'kyma-system', Name: 'registry-credentials' },
  watchedGvk: { group: '', version: 'v1', kind: 'Secret' },
};

function fieldOf(body: string): string {
  try {
    parseWatchEvent(body);
  } catch (error) {
    assert.ok(error instanceof WatchEventError, `a WatchEventError, got ${String(error)}`);
    assert.ok(error.message.includes(error.field), 'the message names the field');
    return error.field;
  }
  assert.fail(`accepted ${body}`);
}

describe('WatchEvent', () => {
  test('the path is the one of DESIGN §6', () => {
    assert.equal(WATCH_EVENT_PATH, '/v2/rt-bootstrapper/event');
  });

  test('parses the wire format from a string and from a Buffer', () => {
    const wire =
      '{"watched":{"Namespace":"kyma-system","Name":"registry-credentials"},' +
      '"watchedGvk":{"group":"","version":"v1","kind":"Secret"}}';
    assert.deepEqual(parseWatchEvent(wire), example);
    assert.deepEqual(parseWatchEvent(Buffer.from(wire)), example);
  });

  test('accepts a cluster-scoped object (empty Namespace) and a named group', () => {
    const ctb = {
      watched: { Namespace: '', Name: 'rt-bootstrapper-k3d.test:ctb:1' },
      watchedGvk: { group: 'certificates.k8s.io', version: 'v1beta1', kind: 'ClusterTrustBundle' },
    };
    assert.deepEqual(parseWatchEvent(JSON.stringify(ctb)), ctb);
  });

  test('ignores and drops unknown fields, as the Go decoder does', () => {
    const body = JSON.stringify({
      ...example,
      extra: 1,
      watched: { ...example.watched, uid: 'x' },
    });
    assert.deepEqual(parseWatchEvent(body), example);
  });

  test('names the offending field', () => {
    const set = (path: string[], value: unknown): string => {
      const copy = JSON.parse(JSON.stringify(example)) as Record<string, Record<string, unknown>>;
      const [outer, inner] = path as [string, string];
      if (value === undefined) Reflect.deleteProperty(copy[outer]!, inner);
      else copy[outer]![inner] = value;
      return JSON.stringify(copy);
    };
    assert.equal(fieldOf('not json'), '(root)');
    assert.equal(fieldOf('[]'), '(root)');
    assert.equal(fieldOf('{"watchedGvk":{"group":"","version":"v1","kind":"Secret"}}'), 'watched');
    assert.equal(fieldOf(set(['watched', 'Name'], '')), 'watched.Name');
    assert.equal(fieldOf(set(['watched', 'Name'], undefined)), 'watched.Name');
    assert.equal(fieldOf(set(['watched', 'Namespace'], 7)), 'watched.Namespace');
    assert.equal(fieldOf(set(['watched', 'Namespace'], 'a'.repeat(64))), 'watched.Namespace');
    assert.equal(fieldOf(set(['watched', 'Name'], 'evil\nlog line')), 'watched.Name');
    assert.equal(fieldOf(set(['watchedGvk', 'kind'], undefined)), 'watchedGvk.kind');
    assert.equal(fieldOf(set(['watchedGvk', 'version'], '')), 'watchedGvk.version');
    assert.equal(fieldOf(set(['watchedGvk', 'group'], null)), 'watchedGvk.group');
  });

  test('the canonical encoding round-trips and does not depend on key order', () => {
    const shuffled =
      '{"watchedGvk":{"kind":"Secret","version":"v1","group":""},' +
      '"watched":{"Name":"registry-credentials","Namespace":"kyma-system"}}';
    assert.equal(encodeWatchEvent(parseWatchEvent(shuffled)), encodeWatchEvent(example));
    const name = fc.stringMatching(/^[a-z0-9.:-]{1,40}$/);
    fc.assert(
      fc.property(fc.stringMatching(/^[a-z0-9-]{0,20}$/), name, name, (ns, n, kind) => {
        const e: WatchEvent = {
          watched: { Namespace: ns, Name: n },
          watchedGvk: { group: '', version: 'v1', kind },
        };
        assert.deepEqual(parseWatchEvent(encodeWatchEvent(e)), e);
      }),
    );
  });

  test('arbitrary input is either a WatchEvent or a WatchEventError', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string(), fc.json()), (body) => {
        try {
          parseWatchEvent(body);
        } catch (error) {
          assert.ok(error instanceof WatchEventError);
        }
      }),
    );
  });
});
