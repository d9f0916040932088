import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { pino } from 'pino';
import {
  part,
  partOf,
  PartGroup,
  PartStartError,
  PartWiringError,
  type Part,
} from '../../../src/process/part-group.js';

const silent = pino({ level: 'silent' });

function recorded(log: string[], name: string, needs: readonly Part[] = [], failStart = false): Part {
  return part(name, {
    needs,
    start: () => {
      if (failStart) throw new Error(`${name} broke`);
      log.push(`start ${name}`);
    },
    stop: () => {
      log.push(`stop ${name}`);
    },
  });
}

describe('a group of parts', () => {
  test('starts each part after its needs, whatever the order added, and stops in reverse', async () => {
    const log: string[] = [];
    const group = new PartGroup('process', silent);
    const caches = recorded(log, 'caches');
    const server = recorded(log, 'server', [caches]);
    const queue = recorded(log, 'queue', [caches]);
    group.add(server);
    group.add(caches);
    group.add(queue);
    await group.start();
    assert.deepEqual(log, ['start caches', 'start server', 'start queue']);
    assert.equal(group.running(), true);
    await group.stop();
    assert.deepEqual(log.slice(3), ['stop queue', 'stop server', 'stop caches']);
    assert.equal(group.running(), false);
    await group.stop();
    assert.equal(log.length, 6, 'a second stop stops nothing');
  });

  test('a part that cannot start stops what started and names itself', async () => {
    const log: string[] = [];
    const group = new PartGroup('process', silent);
    const a = group.add(recorded(log, 'a'));
    group.add(recorded(log, 'b', [a], true));
    group.add(recorded(log, 'c'));
    const error = await group.start().then(
      () => undefined,
      (e: unknown) => e,
    );
    assert.ok(error instanceof PartStartError);
    assert.equal(error.part, 'b');
    assert.match(error.message, /b broke/);
    assert.deepEqual(log, ['start a', 'stop a']);
  });

  test('a failing stop is logged and the others still stop', async () => {
    const log: string[] = [];
    const group = new PartGroup('process', silent);
    group.add(recorded(log, 'a'));
    group.add(part('b', { stop: () => Promise.reject(new Error('stuck')) }));
    group.add(recorded(log, 'c'));
    await group.start();
    await group.stop();
    assert.deepEqual(log, ['start a', 'start c', 'stop c', 'stop a']);
  });

  test('parts that need each other, or a part not in the group, are wiring errors before anything starts', async () => {
    const log: string[] = [];
    const needs: Part[] = [];
    const a = part('a', { needs, start: () => void log.push('a') });
    const b = part('b', { needs: [a], start: () => void log.push('b') });
    needs.push(b);
    const loop = new PartGroup('loop', silent);
    loop.add(a);
    loop.add(b);
    await assert.rejects(
      loop.start(),
      (e: unknown) => e instanceof PartWiringError && /a → b → a/.test(e.message),
    );
    const outside = new PartGroup('outside', silent);
    outside.add(part('c', { needs: [part('elsewhere', {})] }));
    await assert.rejects(outside.start(), PartWiringError);
    assert.deepEqual(log, []);
  });

  test('a group runs inside another as one part, after what the outer group starts first', async () => {
    const log: string[] = [];
    const outer = new PartGroup('process', silent);
    const caches = outer.add(recorded(log, 'caches'));
    const inner = outer.add(new PartGroup('leading', silent, [caches]));
    inner.add(recorded(log, 'restarter', [caches]));
    await outer.start();
    await outer.stop();
    assert.deepEqual(log, ['start caches', 'start restarter', 'stop restarter', 'stop caches']);
  });
});

describe('a part of an object', () => {
  test('starts and stops the object; one that is off still orders the parts that need it', async () => {
    const log: string[] = [];
    const group = new PartGroup('process', silent);
    const off = group.add(partOf('off', undefined));
    const on = group.add(
      partOf(
        'on',
        {
          start: () => void log.push('start on'),
          stop: () => Promise.resolve(void log.push('stop on')),
        },
        [off],
      ),
    );
    assert.deepEqual(
      group.plan().map((p) => p.name),
      ['off', 'on'],
    );
    assert.equal(on.needs?.[0], off);
    await group.start();
    await group.stop();
    assert.deepEqual(log, ['start on', 'stop on']);
  });

  test('the plan is the start order, read without starting anything', () => {
    const log: string[] = [];
    const group = new PartGroup('process', silent);
    const a = recorded(log, 'a');
    group.add(recorded(log, 'b', [a]));
    group.add(a);
    assert.deepEqual(
      group.plan().map((p) => p.name),
      ['a', 'b'],
    );
    assert.deepEqual(log, []);
  });
});
