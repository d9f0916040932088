import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { captureLogs } from '../../support/log-capture.js';

const HUGE = 'n'.repeat(3 * 1024 * 1024);
/** A line of a few KiB at most, whatever a request carried. */
const BOUND = 8 * 1024;

describe('the process logger bounds what requests put into lines', () => {
  test('a 3 MB field, nested or not, is cut to a few hundred characters', () => {
    const { logger, raw, lines } = captureLogs();
    logger.warn({ namespace: HUGE, request: { name: HUGE, containers: [HUGE, HUGE] } }, 'x');
    assert.equal(raw.length, 1);
    assert.ok(raw[0]!.length < BOUND, `line of ${raw[0]!.length} characters`);
    const line = lines()[0]!;
    assert.ok(typeof line.namespace === 'string' && line.namespace.startsWith('nnn'));
    assert.ok(line.namespace.includes('more characters'));
  });

  test("a child logger's bindings (the request's namespace and name), at any depth", () => {
    const { logger, raw } = captureLogs();
    const request = logger.child({ uid: 'u', namespace: HUGE }).child({ name: HUGE });
    request.warn({ op: 'CREATE' }, 'pull Secret not available');
    request.child({ more: HUGE }, { level: 'debug' }).debug('deeper');
    assert.equal(raw.length, 2);
    for (const line of raw) assert.ok(line.length < BOUND, `line of ${line.length} characters`);
    assert.ok(raw[0]!.includes('"uid":"u"'));
  });

  test('the message and its interpolated arguments', () => {
    const { logger, raw } = captureLogs();
    logger.warn(`namespace ${HUGE}`);
    logger.warn({ a: 1 }, 'namespace %s is %s', HUGE, HUGE);
    assert.equal(raw.length, 2);
    for (const line of raw) assert.ok(line.length < BOUND, `line of ${line.length} characters`);
  });

  test('error messages and stacks, also when the message is taken from the error', () => {
    const { logger, raw, lines } = captureLogs();
    const error = new Error(`cannot read namespace ${HUGE}`, { cause: new Error(HUGE) });
    logger.error({ err: error }, 'cannot read namespace');
    logger.error({ err: error });
    logger.error(error);
    assert.equal(raw.length, 3);
    for (const line of raw) assert.ok(line.length < 64 * 1024, `line of ${line.length} characters`);
    const err = lines()[0]!.err as Record<string, unknown>;
    assert.equal(err.type, 'Error');
    assert.ok(typeof err.message === 'string' && err.message.length < 400);
    assert.ok(typeof err.stack === 'string' && err.stack.length < 5000);
  });

  test('short lines pass unchanged, and secrets are still redacted', () => {
    const { logger, lines } = captureLogs();
    logger.info({ namespace: 'team-a', secret: { data: { token: 'abc' } }, token: 't' }, 'copied');
    const line = lines()[0]!;
    assert.equal(line.namespace, 'team-a');
    assert.equal(line.msg, 'copied');
    assert.deepEqual(line.secret, { data: '[redacted]' });
    assert.equal(line.token, '[redacted]');
  });

  test('redaction holds for fields that were cut', () => {
    const { logger, raw } = captureLogs();
    logger.info({ namespace: HUGE, data: { '.dockerconfigjson': 'c2VjcmV0' } }, 'x');
    assert.ok(!raw[0]!.includes('c2VjcmV0'));
  });
});
