import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import { handleDriftValidation } from '../../../src/drift/validation-handler.js';
import type { WatchEvent } from '../../../src/drift/watch-event.js';
import { admissionReview, coreKind } from '../../support/admission-review.js';

class RecordingForwarder {
  readonly sent: WatchEvent[] = [];
  send(event: WatchEvent): void {
    this.sent.push(event);
  }
}

const secret = {
  apiVersion: 'v1',
  kind: 'Secret',
  metadata: { name: 'registry-credentials', namespace: 'kyma-system', resourceVersion: '5' },
  data: { token: 'c2VjcmV0' },
};

const review = (request: Record<string, unknown>): Buffer =>
  Buffer.from(
    admissionReview({
      uid: 'uid-42',
      ...coreKind('Secret', 'secrets'),
      name: 'registry-credentials',
      namespace: 'kyma-system',
      userInfo: { username: 'someone' },
      ...request,
    }),
  );

interface Answer {
  apiVersion: string;
  kind: string;
  response: { uid: string; allowed: boolean; patch?: unknown };
}

function allowedWithUid(reply: { status: number; body: string }, uid: string): void {
  assert.equal(reply.status, 200);
  const answer = JSON.parse(reply.body) as Answer;
  assert.equal(answer.apiVersion, 'admission.k8s.io/v1');
  assert.equal(answer.kind, 'AdmissionReview');
  assert.deepEqual(answer.response, { uid, allowed: true });
}

describe('handleDriftValidation', () => {
  test('a DELETE of a managed Secret is allowed and forwarded', () => {
    const f = new RecordingForwarder();
    const reply = handleDriftValidation(review({ operation: 'DELETE', object: null, oldObject: secret }), f);
    allowedWithUid(reply, 'uid-42');
    assert.deepEqual(f.sent, [
      {
        watched: { Namespace: 'kyma-system', Name: 'registry-credentials' },
        watchedGvk: { group: '', version: 'v1', kind: 'Secret' },
      },
    ]);
  });

  test('a content UPDATE is forwarded, a metadata-only UPDATE is not; both are allowed', () => {
    const f = new RecordingForwarder();
    const changed = { ...secret, data: { token: 'b3RoZXI=' } };
    allowedWithUid(
      handleDriftValidation(review({ operation: 'UPDATE', object: changed, oldObject: secret }), f),
      'uid-42',
    );
    assert.equal(f.sent.length, 1);
    const relabelled = {
      ...secret,
      metadata: { ...secret.metadata, labels: { a: 'b' }, resourceVersion: '6' },
    };
    allowedWithUid(
      handleDriftValidation(review({ operation: 'UPDATE', object: relabelled, oldObject: secret }), f),
      'uid-42',
    );
    assert.equal(f.sent.length, 1);
  });

  test('any resource is allowed with its uid echoed; unmanaged kinds are not forwarded', () => {
    const f = new RecordingForwarder();
    const reply = handleDriftValidation(
      review({
        uid: 'pod-uid',
        ...coreKind('Pod', 'pods'),
        operation: 'CREATE',
        object: { metadata: { name: 'p' }, spec: { containers: [] } },
      }),
      f,
    );
    allowedWithUid(reply, 'pod-uid');
    assert.equal(f.sent.length, 0);
  });

  test('a dry run is allowed and not forwarded: nothing was persisted', () => {
    const f = new RecordingForwarder();
    allowedWithUid(
      handleDriftValidation(review({ operation: 'DELETE', oldObject: secret, dryRun: true }), f),
      'uid-42',
    );
    assert.equal(f.sent.length, 0);
  });

  test('a failing forwarder never turns into a refusal', () => {
    const throwing = {
      send(): void {
        throw new Error('boom');
      },
    };
    allowedWithUid(
      handleDriftValidation(review({ operation: 'DELETE', oldObject: secret }), throwing),
      'uid-42',
    );
  });

  test('400 with a reason for anything that is not an admission.k8s.io/v1 AdmissionReview', () => {
    const f = new RecordingForwarder();
    const bad: [string, string][] = [
      ['{not json', 'not JSON'],
      ['[]', '(root)'],
      [
        JSON.stringify({ apiVersion: 'admission.k8s.io/v1beta1', kind: 'AdmissionReview', request: {} }),
        'apiVersion',
      ],
      [JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }), 'request'],
      [review({ uid: '' }).toString(), 'request.uid'],
      [review({ kind: undefined, operation: 'DELETE' }).toString(), 'request.kind'],
      [review({ operation: 'PATCH' }).toString(), 'request.operation'],
    ];
    for (const [body, reason] of bad) {
      const reply = handleDriftValidation(Buffer.from(body), f);
      assert.equal(reply.status, 400, body);
      assert.ok(reply.body.includes(reason), `${reply.body} names ${reason}`);
    }
    assert.equal(f.sent.length, 0);
  });

  test('property: random bodies get 200 or 400 and never throw', () => {
    const f = new RecordingForwarder();
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string(),
          fc.json(),
          fc
            .record({
              uid: fc.string(),
              operation: fc.constantFrom('CREATE', 'UPDATE', 'DELETE', 'CONNECT', 'X'),
              object: fc.anything(),
              oldObject: fc.anything(),
            })
            .map((r) => review(r).toString()),
        ),
        (body) => {
          const reply = handleDriftValidation(Buffer.from(body), f);
          assert.ok(reply.status === 200 || reply.status === 400);
        },
      ),
    );
  });
});
