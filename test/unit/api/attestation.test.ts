import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  AttestationError,
  MAX_ATTESTED_OBJECTS,
  parseAttestation,
  parseAttestationAnswer,
  versionsDigest,
  type AttestedObject,
} from '../../../src/api/attestation.js';

const obj = (name: string, resourceVersion: string, kind = 'Secret'): AttestedObject => ({
  apiVersion: 'v1',
  kind,
  namespace: 'kyma-system',
  name,
  resourceVersion,
});

describe('attestation wire format', () => {
  test('a valid attestation parses; unknown fields are dropped', () => {
    const body = JSON.stringify({ objects: [{ ...obj('a', '7'), extra: 1 }], more: true });
    assert.deepEqual(parseAttestation(body), { objects: [obj('a', '7')] });
  });

  test('an empty resourceVersion (absent or unreadable object) and cluster-scoped objects parse', () => {
    const att = { objects: [{ ...obj('a', ''), namespace: '' }] };
    assert.deepEqual(parseAttestation(Buffer.from(JSON.stringify(att))), att);
  });

  for (const [name, body, field] of [
    ['not JSON', '{', '(root)'],
    ['no objects', '{}', 'objects'],
    ['a name with a space', JSON.stringify({ objects: [obj('a b', '1')] }), 'objects.0.name'],
    ['an empty kind', JSON.stringify({ objects: [obj('a', '1', '')] }), 'objects.0.kind'],
    [
      'too many objects',
      JSON.stringify({
        objects: Array.from({ length: MAX_ATTESTED_OBJECTS + 1 }, (_, i) => obj(`o${i}`, '1')),
      }),
      'objects',
    ],
  ] as const) {
    test(`refuses ${name}, naming the field`, () => {
      assert.throws(
        () => parseAttestation(body),
        (e: unknown) => e instanceof AttestationError && e.field === field && e.message.includes(field),
      );
    });
  }

  test('an answer parses, and one with a wait below a second is refused', () => {
    const answer = {
      inSync: true,
      check: [{ apiVersion: 'v1', kind: 'Secret', namespace: 'x', name: 'y' }],
      nextAfterSeconds: 420,
    };
    assert.deepEqual(parseAttestationAnswer(JSON.stringify(answer)), answer);
    assert.throws(
      () => parseAttestationAnswer(JSON.stringify({ ...answer, nextAfterSeconds: 0 })),
      (e: unknown) => e instanceof AttestationError && e.field === 'nextAfterSeconds',
    );
  });
});

describe('versionsDigest', () => {
  test('does not depend on order, and counts a duplicate once (the last wins)', () => {
    assert.equal(
      versionsDigest([obj('a', '1'), obj('b', '2')]),
      versionsDigest([obj('b', '2'), obj('a', '1')]),
    );
    assert.equal(versionsDigest([obj('a', '9'), obj('a', '1')]), versionsDigest([obj('a', '1')]));
  });

  test('changes with any resourceVersion, name or kind', () => {
    const base = versionsDigest([obj('a', '1'), obj('b', '2')]);
    assert.notEqual(versionsDigest([obj('a', '1'), obj('b', '3')]), base);
    assert.notEqual(versionsDigest([obj('a', '1'), obj('c', '2')]), base);
    assert.notEqual(versionsDigest([obj('a', '1'), obj('b', '2', 'ConfigMap')]), base);
    assert.notEqual(versionsDigest([obj('a', '1')]), base);
  });
});
