import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { originalKey } from '../../../../src/runtime-agent/workload-health/original-key.js';
import {
  MAX_KNOWN_REVISIONS,
  MAX_RULES_TEXT_CHARS,
  RevisionRules,
} from '../../../../src/runtime-agent/workload-health/revision-rules.js';

const MIRROR = { 'docker.io': 'mirror.example.com/hub' };

describe('revision rules', () => {
  test('a revision noted rewrites by its overrides; one never noted is unknown', () => {
    const rules = new RevisionRules();
    rules.note('v1', MIRROR);
    assert.equal(rules.lookup('v1')?.('nginx:1'), 'mirror.example.com/hub/library/nginx:1');
    assert.equal(rules.lookup('v2'), undefined);
    rules.note('v2', { 'quay.io': 'mirror.example.com/quay' });
    assert.equal(rules.lookup('v1')?.('nginx:1'), 'mirror.example.com/hub/library/nginx:1', 'v1 stays known');
  });

  test('the newest few are kept; an override never used rewrites nothing', () => {
    const rules = new RevisionRules();
    for (let i = 0; i < MAX_KNOWN_REVISIONS + 3; i++) rules.note(`v${i}`, MIRROR);
    assert.equal(rules.revisions().length, MAX_KNOWN_REVISIONS);
    assert.equal(rules.lookup('v0'), undefined);
    rules.note('bad', { 'docker.io': 'not a target//' });
    assert.equal(rules.lookup('bad')?.('nginx:1'), undefined);
  });

  test('kept in the status ConfigMap and taken over as older than those known', () => {
    const before = new RevisionRules();
    before.note('v1', MIRROR);
    const after = new RevisionRules();
    after.note('v2', {});
    after.takeOver(before.toText());
    assert.deepEqual(after.revisions(), ['v1', 'v2']);
    assert.ok(after.lookup('v1'));
    after.note('v1', MIRROR);
    assert.deepEqual(after.revisions(), ['v2', 'v1']);
  });

  test('what is taken over is bounded and checked before it is used', () => {
    const rules = new RevisionRules();
    for (const bad of [
      'not json',
      '[]',
      'null',
      '{"v1":"x"}',
      '{"v1":{"a":1}}',
      'x'.repeat(MAX_RULES_TEXT_CHARS + 1),
    ])
      rules.takeOver(bad);
    assert.deepEqual(rules.revisions(), []);
    rules.takeOver(JSON.stringify({ ['r'.repeat(200)]: MIRROR, ok: MIRROR, __proto__: MIRROR }));
    assert.deepEqual(rules.revisions(), ['ok']);
  });
});

describe('original keys', () => {
  test('an image is keyed as a runtime reads it; others differ', () => {
    assert.equal(originalKey('nginx'), originalKey('docker.io/library/nginx:latest'));
    assert.equal(originalKey('index.docker.io/library/nginx:1'), originalKey('nginx:1'));
    assert.notEqual(originalKey('nginx:1'), originalKey('nginx:2'));
    assert.equal(originalKey('Not//Valid'), originalKey('Not//Valid'));
    assert.match(originalKey('nginx'), /^[0-9a-f]{16}$/);
  });
});
