import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  cloneJson,
  escapePointerToken,
  PatchBuilder,
  toJsonPointer,
  type JsonPath,
} from '../../../src/mutation/patch-builder.js';
import { applyOps, deepFreeze } from './support.js';

type Doc = Record<string, unknown>;

function build(doc: Doc, edits: (b: PatchBuilder<Doc>) => void): PatchBuilder<Doc> {
  const input = deepFreeze(structuredClone(doc));
  const builder = new PatchBuilder(input);
  edits(builder);
  assert.deepEqual(applyOps(input, builder.operations), builder.current, 'patch(input) equals current');
  return builder;
}

describe('JSON pointers', () => {
  const tokens: readonly [string, string][] = [
    ['plain', 'plain'],
    ['a/b', 'a~1b'],
    ['a~b', 'a~0b'],
    ['~/', '~0~1'],
    ['~1', '~01'],
    ['', ''],
    ['rt-bootstrapper.kyma-project.io/defaulted', 'rt-bootstrapper.kyma-project.io~1defaulted'],
  ];
  for (const [token, escaped] of tokens) {
    test(`escapes ${JSON.stringify(token)}`, () => {
      assert.equal(escapePointerToken(token), escaped);
    });
  }

  test('escaping stays right past the cache of frequent tokens (repeats, and many distinct ones)', () => {
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 200; i++) assert.equal(escapePointerToken(`k/${i}~`), `k~1${i}~0`);
    }
  });

  test('toJsonPointer', () => {
    const path: JsonPath = ['spec', 'containers', 0, 'env'];
    assert.equal(toJsonPointer(path), '/spec/containers/0/env');
    assert.equal(toJsonPointer([]), '');
    assert.equal(toJsonPointer(['metadata', 'annotations', 'a/b~c']), '/metadata/annotations/a~1b~0c');
  });
});

describe('PatchBuilder.set', () => {
  test('replace for an existing member, add for an absent one', () => {
    const b = build({ a: { x: 1 } }, (b) => {
      b.set(['a', 'x'], 2);
      b.set(['a', 'y'], 3);
    });
    assert.deepEqual(b.operations, [
      { op: 'replace', path: '/a/x', value: 2 },
      { op: 'add', path: '/a/y', value: 3 },
    ]);
    assert.deepEqual(b.current, { a: { x: 2, y: 3 } });
  });

  test('absent parents are added as one subtree', () => {
    const b = build({ kind: 'Pod' }, (b) => {
      b.set(['metadata', 'annotations', 'a/b'], 'true');
    });
    assert.deepEqual(b.operations, [
      { op: 'add', path: '/metadata', value: { annotations: { 'a/b': 'true' } } },
    ]);
    const c = build({ metadata: { name: 'p' } }, (b) => {
      b.set(['metadata', 'annotations', 'a/b'], 'true');
    });
    assert.deepEqual(c.operations, [{ op: 'add', path: '/metadata/annotations', value: { 'a/b': 'true' } }]);
  });

  test('a null parent is replaced by the subtree', () => {
    const b = build({ metadata: { annotations: null } }, (b) => {
      b.set(['metadata', 'annotations', 'k'], 'v');
    });
    assert.deepEqual(b.operations, [{ op: 'replace', path: '/metadata/annotations', value: { k: 'v' } }]);
  });

  test('array element replace and add at the end', () => {
    const b = build({ list: ['a', 'b'] }, (b) => {
      b.set(['list', 1], 'B');
      b.set(['list', 2], 'c');
    });
    assert.deepEqual(b.current, { list: ['a', 'B', 'c'] });
    assert.deepEqual(
      b.operations.map((o) => o.op),
      ['replace', 'add'],
    );
  });

  test('refuses paths it cannot build', () => {
    const b = new PatchBuilder<Doc>(deepFreeze({ s: 'str', list: [] }));
    assert.throws(() => {
      b.set([], 1);
    }, TypeError);
    assert.throws(() => {
      b.set(['s', 'x'], 1);
    }, /not an object/);
    assert.throws(() => {
      b.set(['missing', 0, 'x'], 1);
    }, /cannot create array/);
    assert.throws(() => {
      b.set(['list', 5], 1);
    }, /no such array index/);
    assert.throws(() => {
      b.set(['list', 'x'], 1);
    }, /no such array index/);
  });

  test('"__proto__" is an ordinary member name', () => {
    // Not checked with rfc6902, which (rightly) refuses to apply "__proto__" paths.
    const b = new PatchBuilder<Doc>(deepFreeze({}));
    b.set(['m', '__proto__'], { polluted: true });
    assert.equal(Object.getPrototypeOf(b.current['m']), Object.prototype);
    assert.ok(Object.hasOwn(b.current['m'] as object, '__proto__'));
    assert.equal(({} as Record<string, unknown>)['polluted'], undefined);
    assert.deepEqual(b.operations, [
      { op: 'add', path: '/m', value: JSON.parse('{"__proto__":{"polluted":true}}') as unknown },
    ]);
  });
});

describe('PatchBuilder.append', () => {
  test('to an existing array: add …/-', () => {
    const b = build({ spec: { list: [{ n: 1 }] } }, (b) => {
      b.append(['spec', 'list'], { n: 2 });
      b.append(['spec', 'list'], { n: 3 });
    });
    assert.deepEqual(b.operations, [
      { op: 'add', path: '/spec/list/-', value: { n: 2 } },
      { op: 'add', path: '/spec/list/-', value: { n: 3 } },
    ]);
  });

  test('to an absent array: the array is added, later appends use …/-', () => {
    const b = build({}, (b) => {
      b.append(['spec', 'list'], 'a');
      b.append(['spec', 'list'], 'b');
    });
    assert.deepEqual(b.operations, [
      { op: 'add', path: '/spec', value: { list: ['a'] } },
      { op: 'add', path: '/spec/list/-', value: 'b' },
    ]);
    assert.deepEqual(b.current, { spec: { list: ['a', 'b'] } });
  });

  test('recorded values are snapshots, not views of the document', () => {
    const value = { name: 'x' };
    const b = build({}, (b) => {
      b.append(['list'], value);
      b.set(['list', 0, 'name'], 'y');
    });
    assert.deepEqual(b.operations[0], { op: 'add', path: '/list', value: [{ name: 'x' }] });
    assert.deepEqual(value, { name: 'x' }, 'the caller’s value is not adopted');
  });

  test('refuses a non-array', () => {
    const b = new PatchBuilder<Doc>(deepFreeze({ a: { b: 1 } }));
    assert.throws(() => {
      b.append(['a'], 1);
    }, /not an array/);
  });
});

describe('PatchBuilder.remove', () => {
  test('array elements and members', () => {
    const b = build({ list: [1, 2, 3], obj: { a: 1, b: 2 } }, (b) => {
      b.remove(['list', 2]);
      b.remove(['list', 0]);
      b.remove(['obj', 'a']);
    });
    assert.deepEqual(b.current, { list: [2], obj: { b: 2 } });
    assert.deepEqual(b.operations, [
      { op: 'remove', path: '/list/2' },
      { op: 'remove', path: '/list/0' },
      { op: 'remove', path: '/obj/a' },
    ]);
  });

  test('refuses what is not there', () => {
    const b = new PatchBuilder<Doc>(deepFreeze({ list: [1], obj: {} }));
    assert.throws(() => {
      b.remove(['list', 1]);
    }, /not present/);
    assert.throws(() => {
      b.remove(['obj', 'x']);
    }, /not present/);
    assert.throws(() => {
      b.remove(['nope', 'x']);
    }, /not present/);
    assert.throws(() => {
      b.remove([]);
    }, TypeError);
  });
});

describe('copy on write', () => {
  test('untouched subtrees are shared, the edited path is copied, the input is untouched', () => {
    const input = deepFreeze({ spec: { a: { deep: [1] }, b: { x: 1 } }, status: { phase: 'Pending' } });
    const b = new PatchBuilder(input);
    b.set(['spec', 'b', 'x'], 2);
    b.set(['spec', 'b', 'y'], 3);
    assert.equal(b.current.status, input.status);
    assert.equal(b.current.spec.a, input.spec.a);
    assert.notEqual(b.current.spec, input.spec);
    assert.deepEqual(input.spec.b, { x: 1 });
    assert.deepEqual(b.current.spec.b, { x: 2, y: 3 });
    assert.equal(b.original, input);
  });

  test('no edits: current is the input and there are no operations', () => {
    const input = deepFreeze({ a: 1 });
    const b = new PatchBuilder(input);
    assert.equal(b.current, input);
    assert.equal(b.changed, false);
    assert.deepEqual(b.operations, []);
  });
});

describe('cloneJson', () => {
  test('deep copy without undefined members', () => {
    const source = { a: [{ b: 1 }], c: undefined, d: null };
    const copy = cloneJson(source);
    assert.deepEqual(copy, { a: [{ b: 1 }], d: null });
    assert.notEqual(copy.a, source.a);
  });
});
