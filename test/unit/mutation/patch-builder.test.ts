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

  test('an array element is named by a number, an object member by a string, never the other way', () => {
    const b = new PatchBuilder<Doc>(deepFreeze({ list: [1], obj: { '0': 1 } }));
    assert.throws(() => {
      b.remove(['list', '0']);
    }, /cannot remove \/list\/0: not present/);
    assert.throws(() => {
      b.remove(['obj', 0]);
    }, /cannot remove \/obj\/0: not present/);
    assert.deepEqual(b.operations, []);
    assert.deepEqual(b.current, { list: [1], obj: { '0': 1 } });
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

describe('refusals name the paths exactly', () => {
  const refusal = (doc: Doc, edit: (b: PatchBuilder<Doc>) => void, message: string): void => {
    const input = deepFreeze(structuredClone(doc));
    const b = new PatchBuilder<Doc>(input);
    assert.throws(
      () => {
        edit(b);
      },
      { name: 'TypeError', message },
    );
    assert.deepEqual(b.operations, [], 'a refused edit records nothing');
    assert.deepEqual(b.current, doc, 'a refused edit changes nothing');
  };

  test('the document root', () => {
    refusal(
      { a: 1 },
      (b) => {
        b.set([], 1);
      },
      'cannot set the document root',
    );
    refusal(
      { a: 1 },
      (b) => {
        b.remove([]);
      },
      'cannot remove the document root',
    );
    refusal(
      { a: 1 },
      (b) => {
        b.append([], 1);
      },
      'cannot append to (root): not an array',
    );
  });

  test('set through a missing array names the array and the whole path', () => {
    refusal(
      { spec: {} },
      (b) => {
        b.set(['spec', 'missing', 0, 'x'], 1);
      },
      'cannot create array /spec/missing to set /spec/missing/0/x',
    );
  });

  test('set through a value that is no container names the first such value', () => {
    refusal(
      { spec: { s: 'str' } },
      (b) => {
        b.set(['spec', 's', 'x'], 1);
      },
      'cannot set /spec/s/x: /spec/s is not an object',
    );
    refusal(
      { s: 7 },
      (b) => {
        b.set(['s', 'x', 'y'], 1);
      },
      'cannot set /s/x/y: /s is not an object',
    );
  });

  test('array indices: negative, past the end, or a name are refused', () => {
    for (const token of [-1, 2, 'x'] as const) {
      refusal(
        { list: ['a'] },
        (b) => {
          b.set(['list', token], 'z');
        },
        `cannot set /list/${String(token)}: no such array index`,
      );
    }
  });

  test('append to an object', () => {
    refusal(
      { a: { b: 1 } },
      (b) => {
        b.append(['a'], 1);
      },
      'cannot append to /a: not an array',
    );
  });

  test('remove under a missing or non-container parent, even when the last name exists higher up', () => {
    refusal(
      { x: 1 },
      (b) => {
        b.remove(['nope', 'x']);
      },
      'cannot remove /nope/x: not present',
    );
    refusal(
      { a: 'str', x: 1 },
      (b) => {
        b.remove(['a', 'x']);
      },
      'cannot remove /a/x: not present',
    );
    refusal(
      { list: [1] },
      (b) => {
        b.remove(['list', 1]);
      },
      'cannot remove /list/1: not present',
    );
    refusal(
      { 'a/b': { '~': 1 } },
      (b) => {
        b.remove(['a/b', '~x']);
      },
      'cannot remove /a~1b/~0x: not present',
    );
  });
});

describe('"__proto__" members', () => {
  const ordinary = (value: unknown): PropertyDescriptor => ({
    value,
    writable: true,
    enumerable: true,
    configurable: true,
  });

  test('set at the top level adds an own member and leaves the prototype alone', () => {
    const b = new PatchBuilder<Doc>(deepFreeze({ a: 1 }));
    b.set(['__proto__'], { x: 1 });
    assert.equal(Object.getPrototypeOf(b.current), Object.prototype);
    assert.deepEqual(Object.getOwnPropertyDescriptor(b.current, '__proto__'), ordinary({ x: 1 }));
    assert.equal((b.current as { x?: unknown }).x, undefined, 'nothing inherited from the value');
    assert.deepEqual(b.operations, [{ op: 'add', path: '/__proto__', value: { x: 1 } }]);
  });

  test('a created "__proto__" member is an ordinary member: it can be replaced and removed', () => {
    const b = new PatchBuilder<Doc>(deepFreeze({}));
    b.set(['m', '__proto__'], 1);
    const m = b.current['m'] as object;
    assert.deepEqual(Object.getOwnPropertyDescriptor(m, '__proto__'), ordinary(1));
    b.set(['m', '__proto__'], 2);
    assert.deepEqual(Object.getOwnPropertyDescriptor(b.current['m'], '__proto__'), ordinary(2));
    b.remove(['m', '__proto__']);
    assert.equal(Object.hasOwn(b.current['m'] as object, '__proto__'), false);
    assert.deepEqual(b.current, { m: {} });
    assert.deepEqual(
      b.operations.map((o) => `${o.op} ${o.path}`),
      ['add /m', 'replace /m/__proto__', 'remove /m/__proto__'],
    );
  });

  test('cloneJson keeps a parsed "__proto__" member as an ordinary one', () => {
    const copy = cloneJson(JSON.parse('{"__proto__":{"a":1}}') as object);
    assert.equal(Object.getPrototypeOf(copy), Object.prototype);
    assert.deepEqual(Object.getOwnPropertyDescriptor(copy, '__proto__'), ordinary({ a: 1 }));
  });
});

describe('cloneJson: own members only', () => {
  test('inherited enumerable members are not copied', () => {
    const source = Object.create({ inherited: 1 }) as Record<string, unknown>;
    source['own'] = 2;
    const copy = cloneJson(source);
    assert.deepEqual(Object.keys(copy), ['own']);
    assert.equal(Object.getPrototypeOf(copy), Object.prototype);
    assert.equal(copy['inherited'], undefined);
  });
});

describe('copy on write: each node is copied at most once', () => {
  test('after the first edit, later edits of the same nodes happen in the copies', () => {
    const input = deepFreeze({ spec: { a: { x: 1 }, b: 1 } });
    const b = new PatchBuilder<Record<string, unknown>>(input);
    b.set(['spec', 'a', 'x'], 2);
    const root = b.current;
    const spec = b.current['spec'] as Record<string, unknown>;
    const a = spec['a'] as Record<string, unknown>;
    b.set(['spec', 'a', 'y'], 3);
    b.set(['spec', 'b'], 2);
    b.remove(['spec', 'a', 'x']);
    assert.equal(b.current, root);
    assert.equal(b.current['spec'], spec);
    assert.equal(spec['a'], a);
    assert.deepEqual(a, { y: 3 });
    assert.deepEqual(input, { spec: { a: { x: 1 }, b: 1 } });
  });

  test('values the builder inserted are its own: editing them copies nothing', () => {
    const b = new PatchBuilder<Record<string, unknown>>(deepFreeze({ spec: {} }));
    b.append(['spec', 'list'], { name: 'x', env: [{ n: 1 }] });
    const list = (b.current['spec'] as Record<string, unknown>)['list'] as Record<string, unknown>[];
    const element = list[0] as Record<string, unknown>;
    const env = element['env'];
    b.set(['spec', 'list', 0, 'name'], 'y');
    b.append(['spec', 'list', 0, 'env'], { n: 2 });
    b.append(['spec', 'list'], { name: 'z' });
    assert.equal((b.current['spec'] as Record<string, unknown>)['list'], list);
    assert.equal(list[0], element);
    assert.equal(element['env'], env);
    assert.deepEqual(list, [{ name: 'y', env: [{ n: 1 }, { n: 2 }] }, { name: 'z' }]);
    assert.deepEqual(
      b.operations.map((o) => `${o.op} ${o.path}`),
      ['add /spec/list', 'replace /spec/list/0/name', 'add /spec/list/0/env/-', 'add /spec/list/-'],
    );
  });
});
