import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from 'fast-check';
import {
  AdmissionDecodeError,
  ENVELOPE_LIMITS,
  decodeAdmissionReview,
  encodeAdmissionResponse,
} from '../../../src/webhook/admission-review.js';

/** What decoding gives: the request, or the 400 reason. */
function outcome(decode: () => unknown): { ok: unknown } | { reason: string } {
  try {
    return { ok: decode() };
  } catch (error) {
    assert.ok(error instanceof AdmissionDecodeError, String(error));
    return { reason: error.message };
  }
}

const validRequest = {
  uid: 'u-1',
  kind: { group: '', version: 'v1', kind: 'Pod' },
  resource: { group: '', version: 'v1', resource: 'pods' },
  name: 'p',
  namespace: 'default',
  operation: 'CREATE',
  object: { metadata: { name: 'p' }, spec: { containers: [{ name: 'c', image: 'nginx' }] } },
  oldObject: null,
  dryRun: false,
};

// Values that are valid somewhere in the envelope and ones that are not.
const field = fc.oneof(
  fc.constant(undefined),
  fc.constant(null),
  fc.constant(''),
  fc.constant('x'),
  fc.constant('CREATE'),
  fc.constant('DELETE'),
  fc.constant(true),
  fc.constant(0),
  fc.constant([]),
  fc.constant({}),
  fc.constant({ group: '', version: 'v1', resource: 'pods' }),
  fc.constant(JSON.parse('{"__proto__":{"x":1},"spec":{}}') as unknown),
  fc.constant({ constructor: 'x', metadata: {} }),
  // Around the envelope's length limits.
  ...[63, 64, 128, 129, 253, 254].map((n) => fc.constant('n'.repeat(n))),
  fc.constant({ group: '', version: 'v1', resource: 'p'.repeat(254) }),
  fc.jsonValue(),
);

const requestKeys = [
  'uid',
  'resource',
  'subResource',
  'name',
  'namespace',
  'operation',
  'object',
  'oldObject',
  'dryRun',
];

const review = fc
  .record({
    apiVersion: fc.oneof(fc.constant('admission.k8s.io/v1'), fc.constant('admission.k8s.io/v1beta1')),
    kind: fc.oneof(fc.constant('AdmissionReview'), fc.constant('Pod')),
    changes: fc.array(fc.tuple(fc.constantFrom(...requestKeys), field), { maxLength: 3 }),
    request: fc.oneof({ weight: 9, arbitrary: fc.constant(true) }, { weight: 1, arbitrary: field }),
  })
  .map(({ apiVersion, kind, changes, request }) => {
    const r: Record<string, unknown> = { ...validRequest };
    for (const [key, value] of changes) {
      if (value === undefined) Reflect.deleteProperty(r, key);
      else r[key] = value;
    }
    return { apiVersion, kind, request: request === true ? r : request };
  });

describe('AdmissionReview decoding', () => {
  test('any JSON decodes to the request or a reason naming the field, never another error', () => {
    fc.assert(
      fc.property(fc.oneof(review, fc.jsonValue()), (json) => {
        const result = outcome(() => decodeAdmissionReview(JSON.stringify(json)));
        if ('reason' in result)
          assert.match(
            result.reason,
            /^(body is not JSON|not an admission\.k8s\.io\/v1 AdmissionReview: \S+: )/,
          );
        else
          assert.equal(
            (result.ok as { uid: unknown }).uid,
            (json as { request: { uid: unknown } }).request.uid,
          );
      }),
      { numRuns: 3000, seed: 7 },
    );
  });

  test('the Pod is handed on as parsed, not copied', () => {
    const request = decodeAdmissionReview(
      JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', request: validRequest }),
    );
    assert.deepEqual(request.object, validRequest.object);
    assert.equal(request.oldObject, undefined);
    assert.equal(request.subResource, '');
    assert.equal(request.dryRun, false);
  });

  test('envelope strings are at most what the API server sends', () => {
    const decode = (over: Record<string, unknown>): unknown =>
      decodeAdmissionReview(
        JSON.stringify({
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          request: { ...validRequest, ...over },
        }),
      );
    assert.ok(
      decode({ namespace: 'n'.repeat(ENVELOPE_LIMITS.namespace), uid: 'u'.repeat(ENVELOPE_LIMITS.uid) }),
    );
    assert.throws(
      () => decode({ namespace: 'n'.repeat(ENVELOPE_LIMITS.namespace + 1) }),
      /request\.namespace: Too big/,
    );
    assert.throws(() => decode({ uid: 'u'.repeat(ENVELOPE_LIMITS.uid + 1) }), /request\.uid: Too big/);
    assert.throws(() => decode({ name: 'p'.repeat(ENVELOPE_LIMITS.name + 1) }), /request\.name: Too big/);
    assert.throws(
      () => decode({ subResource: 's'.repeat(ENVELOPE_LIMITS.name + 1) }),
      /request\.subResource: Too big/,
    );
  });

  test('refusals keep their reasons', () => {
    assert.throws(() => decodeAdmissionReview('{"apiVersion":'), /body is not JSON/);
    assert.throws(
      () =>
        decodeAdmissionReview(
          JSON.stringify({
            apiVersion: 'admission.k8s.io/v1',
            kind: 'AdmissionReview',
            request: { ...validRequest, uid: '' },
          }),
        ),
      /^AdmissionDecodeError: not an admission.k8s.io\/v1 AdmissionReview: request\.uid: /,
    );
    assert.throws(
      () => decodeAdmissionReview(JSON.stringify({ apiVersion: 'v1', kind: 'Pod' })),
      /not an admission.k8s.io\/v1 AdmissionReview: apiVersion: /,
    );
  });
});

describe('AdmissionReview encoding', () => {
  const patch = [{ op: 'add' as const, path: '/metadata/annotations', value: { a: 'b' } }];
  const decoded = (text: string): unknown => JSON.parse(text);

  test('a patch, warnings and a refusal in the AdmissionReview response', () => {
    assert.deepEqual(decoded(encodeAdmissionResponse({ uid: 'u', patch, warnings: ['w'] })), {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: {
        uid: 'u',
        allowed: true,
        patchType: 'JSONPatch',
        patch: Buffer.from(JSON.stringify(patch)).toString('base64'),
        warnings: ['w'],
      },
    });
    assert.deepEqual(decoded(encodeAdmissionResponse({ uid: 'u', denied: 'no' })), {
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'u', allowed: false, status: { code: 500, message: 'no' } },
    });
    assert.equal(
      encodeAdmissionResponse({ uid: 'u' }),
      '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","response":{"uid":"u","allowed":true}}',
    );
  });

  test('byte for byte what JSON.stringify of the review prints', () => {
    const answers = [
      { uid: 'u' },
      { uid: 'a"b\\c\u2028', patch, warnings: ['one', 'two "quoted"'] },
      { uid: 'u', denied: 'refused: "x"\n', warnings: ['w'] },
      { uid: 'u', patch: [], warnings: [] },
      { uid: 'u', patch, denied: 'both' },
    ];
    for (const answer of answers) {
      const response: Record<string, unknown> = { uid: answer.uid, allowed: answer.denied === undefined };
      if (answer.denied !== undefined) response.status = { code: 500, message: answer.denied };
      if (answer.patch && answer.patch.length > 0) {
        response.patchType = 'JSONPatch';
        response.patch = Buffer.from(JSON.stringify(answer.patch)).toString('base64');
      }
      if (answer.warnings && answer.warnings.length > 0) response.warnings = answer.warnings;
      assert.equal(
        encodeAdmissionResponse(answer),
        JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response }),
      );
    }
  });

  test('at most 10 warnings of at most 240 characters', () => {
    const many = Array.from({ length: 12 }, (_, i) => `${String(i)}${'x'.repeat(300)}`);
    const { response } = decoded(encodeAdmissionResponse({ uid: 'u', warnings: many })) as {
      response: { warnings: string[] };
    };
    assert.equal(response.warnings.length, 10);
    assert.ok(response.warnings.every((w) => w.length === 240));
  });
});
