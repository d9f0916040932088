import assert from 'node:assert/strict';
import { EventEmitter } from 'node:events';
import type { IncomingMessage } from 'node:http';
import { PassThrough } from 'node:stream';
import { describe, test } from 'node:test';
import {
  GateRefusal,
  RequestGate,
  type AdmittedBody,
  type GateLimits,
} from '../../../src/webhook/request-gate.js';

/** A request as the gate sees it: headers, a body stream the test writes, and a socket. */
interface FakeRequest {
  readonly req: IncomingMessage;
  send(bytes: number | string): void;
  end(): void;
  /** The client goes away. */
  close(): void;
}

function fakeRequest(declared?: number): FakeRequest {
  const stream = new PassThrough();
  const socket = new EventEmitter();
  const req = Object.assign(stream, {
    rawHeaders: declared === undefined ? [] : ['Content-Length', String(declared)],
    socket,
  }) as unknown as IncomingMessage;
  return {
    req,
    send: (bytes) => stream.write(typeof bytes === 'string' ? bytes : 'x'.repeat(bytes)),
    end: () => stream.end(),
    close: () => {
      stream.destroy();
      socket.emit('close');
    },
  };
}

const LIMITS: GateLimits = {
  bodyLimitBytes: 1000,
  readBudgetBytes: 1000,
  maxRequests: 2,
  decodeBudgetBytes: 1_000_000,
  maxWaiting: 100,
  queueTimeoutMs: 60_000,
  bodyTimeoutMs: 60_000,
};

/** What a gate holds once every request is done with: nothing. */
const IDLE = { inFlight: 0, readBytes: 0, decodeBytes: 0, waiting: 0 };

/** Lets the streams deliver what was written. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function refusal(p: Promise<AdmittedBody>): Promise<GateRefusal> {
  const error = await p.then(
    () => undefined,
    (e: unknown) => e,
  );
  assert.ok(error instanceof GateRefusal, `refused, got ${String(error)}`);
  return error;
}

/** A request of `size` bytes admitted to `gate`, `sent` of them arrived and read: it, and its admission. */
async function arrived(gate: RequestGate, size: number, sent: number) {
  const request = fakeRequest(size);
  const pending = gate.admit(request.req);
  request.send(sent);
  await settle();
  return [request, pending] as const;
}

/** The rest of `request`'s body (`bytes`, or that text) arrives and it ends: its admission, `pending`. */
function rest(
  request: FakeRequest,
  bytes: number | string,
  pending: Promise<AdmittedBody>,
): Promise<AdmittedBody> {
  request.send(bytes);
  request.end();
  return pending;
}

/** A request whose whole `body` arrives (declared, sent and ended), admitted to `gate`: its admission. */
function sentWhole(gate: RequestGate, body: string): Promise<AdmittedBody> {
  const request = fakeRequest(Buffer.byteLength(body));
  return rest(request, body, gate.admit(request.req));
}

/** Asserts that `admitted` holds its whole body, `length` bytes, and gives its place back. */
function releaseWhole(admitted: AdmittedBody, length: number, message?: string): void {
  assert.equal(admitted.body.length, length, message);
  admitted.release();
}

describe('the request gate: what a request holds', () => {
  test('a declared length costs nothing: requests declaring the whole budget and sending nothing do not keep a sent one out', async () => {
    const gate = new RequestGate(LIMITS);
    const liars = Array.from({ length: 10 }, () => fakeRequest(1000));
    const pending = liars.map((l) => gate.admit(l.req));
    await settle();
    assert.deepEqual(gate.state, IDLE);
    const admitted = sentWhole(gate, '{"a":"b"}x');
    const body = await admitted;
    assert.equal(body.body.toString(), '{"a":"b"}x');
    assert.equal(gate.state.inFlight, 1);
    body.release();
    for (const l of liars) l.close();
    for (const p of pending) assert.equal((await refusal(p)).reason, 'gone');
    assert.deepEqual(gate.state, IDLE);
  });

  test('requests whose bodies are still arriving hold no place; each holds only the bytes it sent', async () => {
    const gate = new RequestGate(LIMITS);
    const trickles = Array.from({ length: 5 }, () => fakeRequest(500));
    const pending = trickles.map((t) => gate.admit(t.req));
    for (const t of trickles) t.send(3);
    await settle();
    assert.equal(gate.state.inFlight, 0);
    assert.equal(gate.state.readBytes, 15);
    const admitted = sentWhole(gate, '1234');
    (await admitted).release();
    for (const t of trickles) t.close();
    await Promise.all(pending.map(refusal));
    assert.equal(gate.state.readBytes, 0);
  });

  test('a body not complete by its deadline is refused 408 with its connection closed, and what it sent is given back', async () => {
    const gate = new RequestGate({ ...LIMITS, bodyTimeoutMs: 20 });
    const trickle = fakeRequest(100);
    const pending = gate.admit(trickle.req);
    trickle.send(10);
    const refused = await refusal(pending);
    assert.equal(refused.reason, 'body_timeout');
    assert.equal(refused.status, 408);
    assert.equal(refused.closeConnection, true);
    assert.deepEqual(gate.state, IDLE);
  });

  test('while the read budget is full an incomplete body stops being read until room is given back; a complete one goes on', async () => {
    const gate = new RequestGate({ ...LIMITS, readBudgetBytes: 100 });
    const [big, bigPending] = await arrived(gate, 200, 80);
    const [next, nextPending] = await arrived(gate, 60, 50);
    assert.equal(gate.state.readBytes, 130, 'what arrived is counted, whether it fits or not');
    assert.equal(gate.state.waiting, 1, 'the incomplete body waits for room');
    releaseWhole(await sentWhole(gate, 'x'.repeat(40)), 40, 'a body complete in its chunk is not held back');
    big.close();
    assert.equal((await refusal(bigPending)).reason, 'gone');
    await settle();
    assert.equal(gate.state.waiting, 0, 'room given back: reading goes on');
    releaseWhole(await rest(next, 10, nextPending), 60);
    assert.deepEqual(gate.state, IDLE);
  });

  test('the oldest request reading goes on while the budget is full, so some body always completes', async () => {
    const gate = new RequestGate({ ...LIMITS, readBudgetBytes: 100 });
    const [oldest, oldestPending] = await arrived(gate, 300, 60);
    const [younger, youngerPending] = await arrived(gate, 300, 60);
    assert.equal(gate.state.waiting, 1, 'the younger one waits');
    releaseWhole(await rest(oldest, 240, oldestPending), 300, 'the oldest completes beyond the budget');
    await settle();
    assert.equal(gate.state.waiting, 0, 'the younger one is now the oldest, and reads on');
    (await rest(younger, 240, youngerPending)).release();
    assert.deepEqual(gate.state, IDLE);
  });

  test('a complete body waits for a place, gets the one given back, and is refused 503 (connection kept) when none comes in time', async () => {
    const gate = new RequestGate({ ...LIMITS, maxRequests: 1, queueTimeoutMs: 30 });
    const held = await sentWhole(gate, '{}');
    const refused = await refusal(sentWhole(gate, '{}'));
    assert.equal(refused.reason, 'timeout');
    assert.equal(refused.status, 503);
    assert.equal(refused.closeConnection, false, 'the body was read');

    const patient = new RequestGate({ ...LIMITS, maxRequests: 1 });
    const aHeld = await sentWhole(patient, '{}');
    const bPending = sentWhole(patient, '[]');
    await settle();
    assert.equal(patient.state.waiting, 1);
    assert.equal(patient.state.readBytes, 2, 'the waiting body stays counted as read');
    aHeld.release();
    const bHeld = await bPending;
    assert.equal(bHeld.body.toString(), '[]');
    assert.equal(patient.state.readBytes, 0, 'read bytes given back once the place is taken');
    bHeld.release();
    held.release();
    assert.deepEqual(patient.state, IDLE);
  });

  test('a body declared or sent beyond the limit is refused 413; the read part is given back', async () => {
    const gate = new RequestGate(LIMITS);
    assert.equal((await refusal(gate.admit(fakeRequest(1001).req))).status, 413);
    const chunked = fakeRequest();
    const pending = gate.admit(chunked.req);
    chunked.send(600);
    chunked.send(600);
    const refused = await refusal(pending);
    assert.equal(refused.reason, 'too_large');
    assert.equal(gate.state.readBytes, 0);
  });
});
