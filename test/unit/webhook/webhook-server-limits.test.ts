import assert from 'node:assert/strict';
import { Agent } from 'node:https';
import { connect, type TLSSocket } from 'node:tls';
import { after, describe, test } from 'node:test';
import { MAX_CONTAINERS } from '../../../src/mutation/pod-size.js';
import { podReview, seedPodBefore } from '../../support/fixtures.js';
import { heldCall, httpsCall, type Reply } from '../../support/https-call.js';
import { startUnitWebhook, type UnitWebhook } from '../../support/unit-webhook.js';

const review = podReview;

const started: UnitWebhook[] = [];
async function start(...args: Parameters<typeof startUnitWebhook>): Promise<UnitWebhook> {
  const w = await startUnitWebhook(...args);
  started.push(w);
  return w;
}
after(async () => {
  for (const w of started) await w.server.close({ timeoutMs: 500 });
});

const call = (
  w: UnitWebhook,
  path: string,
  body?: string | Buffer,
  method = 'POST',
  headers: Record<string, string | number> = {},
  agent?: Agent,
): Promise<Reply> =>
  httpsCall({
    port: w.port,
    caPem: w.caPem,
    path,
    method,
    ...(body !== undefined ? { body } : {}),
    headers,
    ...(agent ? { agent } : {}),
  });

/** Polls until `fn` holds (or fails the test after 10 s). */
async function until(fn: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!fn()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** A POST whose body is sent only in half until `finish` is called. */
const heldPost = (w: UnitWebhook, body: string): { finish: () => void; reply: Promise<Reply> } =>
  heldCall({ port: w.port, caPem: w.caPem, path: '/mutate', body }, Math.floor(body.length / 2));

async function refusedCount(w: UnitWebhook, reason: string): Promise<number> {
  const values =
    (await w.registry.getSingleMetric('rtb_webhook_requests_refused_total')?.get())?.values ?? [];
  return values.find((v) => v.labels.reason === reason)?.value ?? 0;
}

describe('the webhook server: paths and methods', () => {
  test('an unknown path is 404 whatever the method; a known one with the wrong method 405', async () => {
    const w = await start();
    assert.equal((await call(w, '/nope', '{}')).status, 404);
    assert.equal((await call(w, '/nope', undefined, 'GET')).status, 404);
    assert.equal((await call(w, '/mutate', undefined, 'GET')).status, 405);
    assert.equal((await call(w, '/healthz', '{}')).status, 405);
    assert.equal((await call(w, '/healthz', undefined, 'GET')).status, 200);
  });
});

describe('the webhook server: bounded memory', () => {
  test('a body declared larger than the limit is refused unread (413, connection closed)', async () => {
    const w = await start({ limits: { bodyLimitBytes: 1000 } });
    const reply = await call(w, '/mutate', 'x'.repeat(1001));
    assert.equal(reply.status, 413);
    assert.equal(reply.headers.connection, 'close');
    assert.equal(await refusedCount(w, 'too_large'), 1);
    const chunked = await call(w, '/mutate', 'x'.repeat(5000), 'POST', { 'transfer-encoding': 'chunked' });
    assert.equal(chunked.status, 413, 'also when the body declares no length');
    await until(() => w.server.load.inFlight === 0 && w.server.load.readBytes === 0, 'all room given back');
  });

  test('a request whose body is still arriving holds no place and only the bytes it sent; others are answered meanwhile', async () => {
    const w = await start({ limits: { maxRequests: 1 } });
    const firstBody = review(seedPodBefore(), { uid: 'first' });
    const first = heldPost(w, firstBody);
    const half = Math.floor(firstBody.length / 2);
    await until(() => w.server.load.readBytes === half, 'the sent half counted');
    assert.equal(w.server.load.inFlight, 0, 'no place before the body is complete');
    const second = await call(w, '/mutate', review(seedPodBefore(), { uid: 'second' }));
    assert.equal(second.status, 200);
    assert.match(second.body, /"uid":"second"/);
    first.finish();
    const a = await first.reply;
    assert.equal(a.status, 200);
    assert.match(a.body, /"uid":"first"/);
    await until(() => w.server.load.inFlight === 0 && w.server.load.readBytes === 0, 'all room given back');
  });

  test('a body declared and not sent in time is refused (408, connection closed), and gives back what it sent', async () => {
    const w = await start({ limits: { bodyTimeoutMs: 200 } });
    const body = review(seedPodBefore());
    const held = heldPost(w, body);
    const cut = await held.reply;
    assert.equal(cut.status, 408);
    assert.equal(cut.headers.connection, 'close');
    assert.equal(await refusedCount(w, 'body_timeout'), 1);
    await until(() => w.server.load.readBytes === 0, 'the sent half given back');
    held.finish();
  });

  test('beyond the places a read request waits; one that waits too long, or finds too many waiting, gets 503 without Retry-After', async () => {
    let open = (): void => undefined;
    const gate = new Promise<boolean>((resolve) => {
      open = () => {
        resolve(true);
      };
    });
    const w = await start({ limits: { maxRequests: 1, queueTimeoutMs: 300 }, ensurePullSecret: () => gate });
    // In kyma-system every feature applies: the pull Secret is ensured, and the request held there.
    const first = call(w, '/mutate', review(seedPodBefore(), { uid: 'first', namespace: 'kyma-system' }));
    await until(() => w.server.load.inFlight === 1, 'the first request in flight');
    const late = await call(w, '/mutate', review(seedPodBefore()));
    assert.equal(late.status, 503);
    assert.equal(late.headers['retry-after'], undefined, 'client-go would retry until its timeout');
    assert.equal(await refusedCount(w, 'timeout'), 1);
    const waiting = call(w, '/mutate', review(seedPodBefore(), { uid: 'waiting' }));
    await until(() => w.server.load.waiting === 1, 'the next request waiting');
    open();
    assert.equal((await first).status, 200);
    const answered = await waiting;
    assert.equal(answered.status, 200);
    assert.match(answered.body, /"uid":"waiting"/);

    let hold = (): void => undefined;
    const held = new Promise<boolean>((resolve) => {
      hold = () => {
        resolve(true);
      };
    });
    const fullHeld = await start({
      limits: { maxRequests: 1, maxWaiting: 0 },
      ensurePullSecret: () => held,
    });
    const busy = call(fullHeld, '/mutate', review(seedPodBefore(), { namespace: 'kyma-system' }));
    await until(() => fullHeld.server.load.inFlight === 1, 'the first request in flight');
    const refused = await call(fullHeld, '/mutate', review(seedPodBefore()));
    assert.equal(refused.status, 503);
    assert.match(refused.body, /too many requests waiting/);
    hold();
    assert.equal((await busy).status, 200);
  });

  test('a body whose decoding would take more than the decode budget is refused (413); text of the same size is not', async () => {
    const w = await start({ limits: { decodeBudgetBytes: 1_000_000 } });
    const depth = 20_000;
    const nested = review({ spec: 0 }).replace('"spec":0', `"spec":${'['.repeat(depth)}${']'.repeat(depth)}`);
    const complex = await call(w, '/mutate', nested);
    assert.equal(complex.status, 413);
    assert.match(complex.body, /too complex/);
    assert.equal(await refusedCount(w, 'too_complex'), 1);
    const pod = seedPodBefore();
    const text = review({
      ...pod,
      metadata: { ...pod.metadata, annotations: { pad: 'x'.repeat(2 * depth) } },
    });
    assert.equal((await call(w, '/mutate', text)).status, 200);
  });

  test('envelope strings longer than the API server sends are refused (400), not copied around', async () => {
    const w = await start();
    const ns = await call(w, '/mutate', review(seedPodBefore(), { namespace: 'n'.repeat(64) }));
    assert.equal(ns.status, 400);
    assert.match(ns.body, /request\.namespace/);
    assert.ok(ns.body.length < 300, 'the reason does not echo the value');
    assert.equal(
      (await call(w, '/mutate', review(seedPodBefore(), { namespace: 'n'.repeat(63) }))).status,
      200,
    );
    assert.equal((await call(w, '/mutate', review(seedPodBefore(), { uid: 'u'.repeat(129) }))).status, 400);
    assert.equal((await call(w, '/mutate', review(seedPodBefore(), { name: 'p'.repeat(254) }))).status, 400);
  });

  test(`a Pod of more than ${MAX_CONTAINERS} containers is not mutated: admitted with a warning, or refused when failing closed`, async () => {
    const pod = seedPodBefore();
    const containers = Array.from({ length: MAX_CONTAINERS + 1 }, (_, i) => ({
      name: `c${i}`,
      image: 'replace.me/x',
    }));
    const body = review({ ...pod, spec: { containers } });
    const open = JSON.parse((await call(await start(), '/mutate', body)).body) as {
      response: { allowed: boolean; patch?: string; warnings?: string[] };
    };
    assert.equal(open.response.allowed, true);
    assert.equal(open.response.patch, undefined);
    assert.match(open.response.warnings?.join() ?? '', /1001 containers, more than the 1000/);
    const closed = JSON.parse((await call(await start({ failOpen: false }), '/mutate', body)).body) as {
      response: { allowed: boolean };
    };
    assert.equal(closed.response.allowed, false);
    const atLimit = review({ ...pod, spec: { containers: containers.slice(0, MAX_CONTAINERS) } });
    const mutated = JSON.parse((await call(await start(), '/mutate', atLimit)).body) as {
      response: { patch?: string };
    };
    assert.ok(mutated.response.patch, `${MAX_CONTAINERS} containers are mutated`);
  });
});

/** A TLS connection on which nothing is sent yet. */
function connected(w: UnitWebhook): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const s = connect({ host: '127.0.0.1', port: w.port, ca: w.caPem }, () => {
      resolve(s);
    });
    s.on('error', reject);
  });
}

/** Sends one raw HTTP/1.1 request on `socket`; resolves with the whole answer once the server closes. */
function rawExchange(socket: TLSSocket, body: string): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    socket.setEncoding('utf8');
    socket.on('data', (c: string) => (text += c));
    socket.on('end', () => {
      resolve(text);
    });
    socket.on('error', reject);
    socket.write(
      `POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  });
}

describe('the webhook server: drain', () => {
  test('while draining: readiness fails, answers close their connections, a connection just made is still served, idle ones are closed', async () => {
    const w = await start();
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const before = await call(w, '/mutate', review(seedPodBefore()), 'POST', {}, agent);
    assert.equal(before.status, 200);
    assert.notEqual(before.headers.connection, 'close');
    const fresh = await connected(w);
    const closing = w.server.close({ delayMs: 300, timeoutMs: 5_000 });
    const ready = await call(w, '/readyz', undefined, 'GET');
    assert.equal(ready.status, 503);
    const during = await call(w, '/mutate', review(seedPodBefore()), 'POST', {}, agent);
    assert.equal(during.status, 200);
    assert.equal(during.headers.connection, 'close');
    // After the delay no new connection is accepted…
    await until(() => !w.server.listening, 'the listener closed');
    await assert.rejects(call(w, '/healthz', undefined, 'GET'), /ECONNREFUSED/);
    // …but a request on a connection made before is answered, not reset.
    const answer = await rawExchange(fresh, review(seedPodBefore(), { uid: 'late' }));
    assert.match(answer, /^HTTP\/1\.1 200 /);
    assert.match(answer, /connection: close/i);
    assert.match(answer, /"uid":"late"/);
    await closing;
    assert.equal(w.server.load.connections, 0);
    agent.destroy();
  });
});
