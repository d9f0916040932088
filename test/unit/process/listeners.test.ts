import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Listeners } from '../../../src/process/listeners.js';

test('listeners hear each event in the order they were added, until removed', () => {
  const heard: string[] = [];
  const events = new Listeners<[key: string]>();
  events.emit('before');
  const removeA = events.add((key) => heard.push(`a ${key}`));
  events.add((key) => heard.push(`b ${key}`));
  events.emit('one');
  removeA();
  events.emit('two');
  assert.deepEqual(heard, ['a one', 'b one', 'b two']);
});
