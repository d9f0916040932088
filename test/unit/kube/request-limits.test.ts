import assert from 'node:assert/strict';
import type http from 'node:http';
import { after, before, describe, test } from 'node:test';
import type { ClusterAccess } from '../../../src/kube/cluster-access.js';
import { KeepAliveAccess } from '../../../src/kube/keep-alive-access.js';
import { kubeRequest } from '../../../src/kube/kube-request.js';
import { KubeListWatch } from '../../../src/kube/list-watch.js';
import {
  AnswerTooLargeError,
  RequestAbortedError,
  RequestDeadlineError,
  requestBoundIn,
  type RequestLimits,
} from '../../../src/kube/request-limits.js';
import { startLoopbackServer, type LoopbackServer } from '../../support/loopback-server.js';

/**
 * A hostile API server: answers of 50 MB (streamed as fast as the client reads), answers dripped
 * a byte at a time, watch events that never end. Counts what it managed to send on each path.
 */
let loopback: LoopbackServer;
const sent = new Map<string, number>();
const closed = new Set<string>();
const timers = new Set<NodeJS.Timeout>();
const FIFTY_MB = 50 << 20;
const chunk = Buffer.from(`[${'0,'.repeat(32 * 1024)}0],`);

function stream(res: http.ServerResponse, path: string, prefix: string, code = 200): void {
  if (!res.headersSent) res.writeHead(code, { 'content-type': 'application/json' });
  res.write(prefix);
  let n = prefix.length;
  const more = (): void => {
    while (n < FIFTY_MB) {
      n += chunk.length;
      sent.set(path, n);
      if (!res.write(chunk)) {
        res.once('drain', more);
        return;
      }
    }
    res.end('[]]}');
  };
  more();
}

const access = (limits: RequestLimits | undefined): ClusterAccess =>
  new KeepAliveAccess(loopback.access, {}, limits);

const LIMITS: RequestLimits = { maxAnswerBytes: 2 << 20, deadlineMs: 600 };

describe('request limits on a cluster not trusted', () => {
  before(async () => {
    loopback = await startLoopbackServer((req, res) => {
      const path = (req.url ?? '/').split('?')[0] ?? '/';
      res.on('close', () => closed.add(path));
      if (path === '/big' || path === '/list') {
        stream(res, path, '{"kind":"List","items":[');
      } else if (path === '/big-error') {
        stream(res, path, '{"kind":"Status","x":[', 500);
      } else if (path === '/drip') {
        // Headers at once, then one byte every 50 ms: the inactivity timeout never fires.
        res.writeHead(200, { 'content-type': 'application/json' });
        const t = setInterval(() => {
          res.write(' ');
          sent.set(path, (sent.get(path) ?? 0) + 1);
        }, 50);
        timers.add(t);
        res.on('close', () => {
          clearInterval(t);
        });
      } else if (path === '/hang') {
        // Nothing at all.
      } else if (path === '/watch-huge') {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n');
        stream(res, path, '{"type":"ADDED","object":{"x":[');
      } else {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ kind: 'Secret', metadata: { name: 'x' } }));
      }
    });
  });
  after(async () => {
    for (const t of timers) clearInterval(t);
    await loopback.close();
  });

  test('a 50 MB answer fails at the cap, names it and the path, and the connection is dropped', async () => {
    for (const path of ['/big', '/big-error']) {
      await assert.rejects(
        kubeRequest(access(LIMITS), { method: 'GET', path }),
        (e: unknown) =>
          e instanceof AnswerTooLargeError &&
          e.limitBytes === LIMITS.maxAnswerBytes &&
          e.message ===
            `GET ${path}: the answer exceeds the cap of 2097152 bytes on answers from this cluster`,
      );
      await waitFor(() => closed.has(path));
      assert.ok((sent.get(path) ?? 0) < 20 << 20, `${path}: the server sent ${sent.get(path)} bytes`);
    }
    // Written answers are not read but still bounded.
    await assert.rejects(
      kubeRequest(access(LIMITS), { method: 'PATCH', path: '/big', body: {}, parseResponse: false }),
      AnswerTooLargeError,
    );
    // A small answer passes.
    const ok = await kubeRequest<{ kind: string }>(access(LIMITS), { method: 'GET', path: '/ok' });
    assert.equal(ok.kind, 'Secret');
  });

  test('a server dripping a byte at a time fails at the deadline; a silent one at the inactivity timeout', async () => {
    // Margins wide enough for a loaded machine: a pause of the event loop under a second must not
    // let the inactivity timeout win.
    const err = await kubeRequest(access({ ...LIMITS, deadlineMs: 2_000 }), {
      method: 'GET',
      path: '/drip',
      timeoutMs: 1_000,
    }).catch((e: unknown) => e);
    assert.ok(err instanceof RequestDeadlineError, String(err));
    assert.equal(
      err.message,
      'GET /drip: no complete answer within 2000 ms (the deadline of a call to this cluster)',
    );
    assert.ok((sent.get('/drip') ?? 0) > 20, 'the inactivity timeout (1 s) would not have fired');
    assert.equal(requestBoundIn(new Error('wrapped', { cause: err })), err);
    await assert.rejects(
      kubeRequest(access(LIMITS), { method: 'GET', path: '/hang', timeoutMs: 100 }),
      /timed out/,
    );
  });

  test('an abort of the signal ends calls in flight and refuses new ones', async () => {
    const stop = new AbortController();
    const limited = access({ ...LIMITS, deadlineMs: 60_000, signal: stop.signal });
    const pending = kubeRequest(limited, { method: 'GET', path: '/drip' });
    setTimeout(() => {
      stop.abort();
    }, 100);
    await assert.rejects(
      pending,
      (e: unknown) => e instanceof RequestAbortedError && /stopping/.test(e.message),
    );
    await assert.rejects(kubeRequest(limited, { method: 'GET', path: '/ok' }), RequestAbortedError);
  });

  test('a paced access holds each answer, and each failure, until its pace lets the caller go on', async () => {
    const gates: (() => void)[] = [];
    const limited = access({
      ...LIMITS,
      pace: () =>
        new Promise<void>((resolve) => {
          gates.push(resolve);
        }),
    });
    let done = false;
    const ok = kubeRequest<{ kind: string }>(limited, { method: 'GET', path: '/ok' }).finally(() => {
      done = true;
    });
    await waitFor(() => gates.length === 1);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(done, false, 'the answer waits for its turn');
    gates.shift()?.();
    assert.equal((await ok).kind, 'Secret');
    let failed = false;
    const big = kubeRequest(limited, { method: 'GET', path: '/big' }).catch((e: unknown) => {
      failed = true;
      return e;
    });
    await waitFor(() => gates.length === 1);
    await new Promise((r) => setTimeout(r, 20));
    assert.equal(failed, false, 'a failure waits for its turn too');
    gates.shift()?.();
    assert.ok((await big) instanceof AnswerTooLargeError);
  });

  test('without limits nothing changes: the whole answer is read', async () => {
    const got = await kubeRequest<{ items: unknown[] }>(access(undefined), { method: 'GET', path: '/big' });
    assert.ok(got.items.length > 100);
  });

  test('a list page over the cap, a list at the deadline, a watch event over the cap: typed errors', async () => {
    const lw = (path: string, limits: RequestLimits): KubeListWatch<unknown> =>
      new KubeListWatch<unknown>(access(limits), path);
    await assert.rejects(
      lw('/list', LIMITS).list({}, new AbortController().signal),
      (e: unknown) =>
        e instanceof AnswerTooLargeError && /list \/list: the answer exceeds the cap/.test(e.message),
    );
    await assert.rejects(lw('/drip', LIMITS).list({}, new AbortController().signal), RequestDeadlineError);
    const events: string[] = [];
    await assert.rejects(
      lw('/watch-huge', LIMITS).watch(
        { resourceVersion: '1', timeoutSeconds: 60, allowWatchBookmarks: true },
        (type, o) => events.push(`${type} ${(o as { metadata?: { name?: string } }).metadata?.name}`),
        new AbortController().signal,
      ),
      (e: unknown) =>
        e instanceof AnswerTooLargeError &&
        e.message.startsWith('watch /watch-huge: one event: the answer exceeds'),
    );
    assert.deepEqual(events, ['ADDED a'], 'the events before the huge one were delivered');
    await waitFor(() => closed.has('/watch-huge'));
  });
});

async function waitFor(cond: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 10));
  assert.ok(cond());
}
