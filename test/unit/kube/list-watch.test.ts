import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeApiError, isResourceExpired } from '../../../src/kube/kube-errors.js';
import {
  KubeListWatch,
  METADATA_LIST_ACCEPT,
  METADATA_WATCH_ACCEPT,
  createListerWatcher,
} from '../../../src/kube/list-watch.js';
import { AnswerTooLargeError } from '../../../src/kube/request-limits.js';
import { Reflector } from '../../../src/kube/reflector.js';
import type { WatchEventType } from '../../../src/kube/lister-watcher.js';
import { closeServer, listenLoopback } from '../../support/server-lifecycle.js';

type Route = (req: http.IncomingMessage, res: http.ServerResponse, url: URL) => void;

/** A tiny HTTP server whose answer per test is set through `route`: a unit test of the HTTP shell. */
let route: Route = (_req, res) => res.end();
let server: http.Server;
let base = '';
const requests: { url: URL; headers: http.IncomingHttpHeaders }[] = [];

function kubeConfig(server: string): KubeConfig {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server, skipTLSVerify: true }],
    users: [{ name: 'u', token: 'secret-token' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return kc;
}

function status(res: http.ServerResponse, code: number, reason: string, message: string): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', status: 'Failure', code, reason, message }));
}

const path = '/api/v1/namespaces/kcp-system/secrets';
const signal = (): AbortSignal => new AbortController().signal;

void describe('KubeListWatch', () => {
  before(async () => {
    server = http.createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      requests.push({ url, headers: req.headers });
      route(req, res, url);
    });
    base = `http://127.0.0.1:${await listenLoopback(server)}`;
  });
  after(() => closeServer(server));

  void test('list sends the query and credentials and restores kind/apiVersion on items', async () => {
    route = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          kind: 'SecretList',
          apiVersion: 'v1',
          metadata: { resourceVersion: '55', continue: 'next-page' },
          items: [{ metadata: { name: 'a', namespace: 'kcp-system' } }],
        }),
      );
    };
    const lw = createListerWatcher<{ kind?: string; apiVersion?: string }>(kubeConfig(base), path);
    const page = await lw.list(
      { limit: 2, continue: 'tok', labelSelector: 'a=b', fieldSelector: 'metadata.name=a' },
      signal(),
    );
    assert.equal(page.resourceVersion, '55');
    assert.equal(page.continue, 'next-page');
    const [first] = page.items;
    assert.ok(first);
    assert.equal(first.kind, 'Secret');
    assert.equal(first.apiVersion, 'v1');
    const { url, headers } = requests.at(-1)!;
    assert.equal(url.pathname, path);
    assert.deepEqual(Object.fromEntries(url.searchParams), {
      limit: '2',
      continue: 'tok',
      labelSelector: 'a=b',
      fieldSelector: 'metadata.name=a',
    });
    assert.equal(headers.authorization, 'Bearer secret-token');
    assert.equal(headers.accept, 'application/json');
  });

  void test('metadata only: lists and watches ask for PartialObjectMetadata, JSON as the fallback', async () => {
    route = (req, res, url) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (url.searchParams.get('watch') === '1') {
        res.end(`${JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '6' } } })}\n`);
        return;
      }
      res.end(
        JSON.stringify({ kind: 'PartialObjectMetadataList', metadata: { resourceVersion: '5' }, items: [] }),
      );
    };
    const lw = new KubeListWatch(kubeConfig(base), path, { metadataOnly: true });
    await lw.list({}, signal());
    assert.equal(requests.at(-1)?.headers.accept, METADATA_LIST_ACCEPT);
    assert.match(
      METADATA_LIST_ACCEPT,
      /^application\/json;as=PartialObjectMetadataList;g=meta\.k8s\.io;v=v1,application\/json$/,
    );
    await lw.watch(
      { resourceVersion: '5', timeoutSeconds: 1, allowWatchBookmarks: true },
      () => undefined,
      signal(),
    );
    assert.equal(requests.at(-1)?.headers.accept, METADATA_WATCH_ACCEPT);
    assert.match(
      METADATA_WATCH_ACCEPT,
      /^application\/json;as=PartialObjectMetadata;g=meta\.k8s\.io;v=v1,application\/json$/,
    );
  });

  void test("a page's answer is measured, and one over its byte cap fails as it arrives", async () => {
    const body = JSON.stringify({
      kind: 'SecretList',
      apiVersion: 'v1',
      metadata: { resourceVersion: '5' },
      items: [{ metadata: { name: 'a', annotations: { blob: 'x'.repeat(100_000) } } }],
    });
    route = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(body);
    };
    const lw = new KubeListWatch(kubeConfig(base), path);
    const page = await lw.list({ limit: 2, maxBytes: body.length }, signal());
    assert.equal(page.bytes, body.length);
    await assert.rejects(lw.list({ limit: 2, maxBytes: body.length - 1 }, signal()), AnswerTooLargeError);
  });

  void test('a server path prefix is kept', async () => {
    route = (_req, res) => {
      res.end(
        JSON.stringify({
          kind: 'SecretList',
          apiVersion: 'v1',
          metadata: { resourceVersion: '1' },
          items: [],
        }),
      );
    };
    await new KubeListWatch(kubeConfig(`${base}/k8s/clusters/c-1/`), path).list({}, signal());
    assert.equal(requests.at(-1)!.url.pathname, `/k8s/clusters/c-1${path}`);
  });

  void test('HTTP errors become KubeApiError with the Status code and reason', async () => {
    route = (_req, res) => {
      status(res, 410, 'Expired', 'The provided continue parameter is too old');
    };
    const lw = new KubeListWatch(kubeConfig(base), path);
    const err = await lw.list({ continue: 'old' }, signal()).catch((e: unknown) => e);
    assert.ok(err instanceof KubeApiError);
    assert.equal(err.statusCode, 410);
    assert.equal(err.reason, 'Expired');
    assert.ok(isResourceExpired(err));

    route = (_req, res) => {
      res.writeHead(503);
      res.end('upstream unavailable');
    };
    await assert.rejects(
      lw.list({}, signal()),
      (e: unknown) => e instanceof KubeApiError && e.statusCode === 503,
    );
  });

  void test('network errors become KubeApiError without a status code, with the cause', async () => {
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const port = (closed.address() as AddressInfo).port;
    await new Promise<void>((r) =>
      closed.close(() => {
        r();
      }),
    );
    const err = await new KubeListWatch(kubeConfig(`http://127.0.0.1:${port}`), path)
      .list({}, signal())
      .catch((e: unknown) => e);
    assert.ok(err instanceof KubeApiError);
    assert.equal(err.statusCode, undefined);
    assert.ok(err.cause instanceof Error);
  });

  void test('watch streams newline-delimited events split across chunks and resolves at the end', async () => {
    route = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const e1 = JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a', resourceVersion: '6' } } });
      const e2 = JSON.stringify({ type: 'BOOKMARK', object: { metadata: { resourceVersion: '7' } } });
      const e3 = JSON.stringify({
        type: 'DELETED',
        object: { metadata: { name: 'ä', resourceVersion: '8' } },
      });
      const all = Buffer.from(`${e1}\n${e2}\n${JSON.stringify({ type: 'FUTURE', object: {} })}\n${e3}`);
      // Split inside the multi-byte 'ä' too.
      const cut = all.indexOf(Buffer.from('ä')) + 1;
      res.write(all.subarray(0, 10));
      setTimeout(() => {
        res.write(all.subarray(10, cut));
        setTimeout(() => res.end(all.subarray(cut)), 5);
      }, 5);
    };
    const seen: [WatchEventType, unknown][] = [];
    await new KubeListWatch(kubeConfig(base), path).watch(
      { resourceVersion: '5', timeoutSeconds: 321, allowWatchBookmarks: true, labelSelector: 'x=y' },
      (type, obj) => seen.push([type, (obj as { metadata?: { name?: string } }).metadata?.name]),
      signal(),
    );
    assert.deepEqual(seen, [
      ['ADDED', 'a'],
      ['BOOKMARK', undefined],
      ['DELETED', 'ä'],
    ]);
    assert.deepEqual(Object.fromEntries(requests.at(-1)!.url.searchParams), {
      watch: '1',
      resourceVersion: '5',
      timeoutSeconds: '321',
      allowWatchBookmarks: 'true',
      labelSelector: 'x=y',
    });
  });

  void test('watch: a 410 response rejects; abort resolves; a dropped stream rejects', async () => {
    const lw = new KubeListWatch(kubeConfig(base), path);
    const opts = { resourceVersion: '1', timeoutSeconds: 10, allowWatchBookmarks: true } as const;
    route = (_req, res) => {
      status(res, 410, 'Gone', 'too old resource version');
    };
    await assert.rejects(
      lw.watch(opts, () => undefined, signal()),
      (e: unknown) => isResourceExpired(e),
    );

    let serverSawClose!: () => void;
    const closedByClient = new Promise<void>((r) => (serverSawClose = r));
    route = (_req, res) => {
      res.writeHead(200);
      res.write(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'a' } } })}\n`);
      res.on('close', () => {
        serverSawClose();
      });
    };
    const ac = new AbortController();
    let events = 0;
    const watching = lw.watch(
      opts,
      () => {
        events++;
        ac.abort();
      },
      ac.signal,
    );
    await watching;
    await closedByClient;
    assert.equal(events, 1);

    route = (_req, res) => {
      res.writeHead(200);
      res.write('{"type":"ADDED","object":{"metadata":{"name":"a"}}}\n{"type":"MOD');
      setTimeout(() => res.socket?.destroy(), 5);
    };
    await assert.rejects(
      lw.watch(opts, () => undefined, signal()),
      KubeApiError,
    );
  });

  void test('watch: a malformed line rejects', async () => {
    route = (_req, res) => {
      res.writeHead(200);
      res.end('this is not json\n');
    };
    await assert.rejects(
      new KubeListWatch(kubeConfig(base), path).watch(
        { resourceVersion: '1', timeoutSeconds: 10, allowWatchBookmarks: true },
        () => undefined,
        signal(),
      ),
      KubeApiError,
    );
  });

  void test('a Reflector over KubeListWatch syncs, follows the watch and relists after ERROR 410', async () => {
    let lists = 0;
    const openWatches: http.ServerResponse[] = [];
    route = (_req, res, url) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      if (url.searchParams.get('watch') === null) {
        lists++;
        const items = lists === 1 ? [{ metadata: { name: 'a', resourceVersion: '1' } }] : [];
        res.end(
          JSON.stringify({
            kind: 'SecretList',
            apiVersion: 'v1',
            metadata: { resourceVersion: `${lists}0` },
            items,
          }),
        );
        return;
      }
      openWatches.push(res);
      if (url.searchParams.get('resourceVersion') === '10') {
        res.write(
          `${JSON.stringify({ type: 'ADDED', object: { metadata: { name: 'b', resourceVersion: '11' } } })}\n`,
        );
        res.write(
          `${JSON.stringify({ type: 'ERROR', object: { kind: 'Status', code: 410, reason: 'Expired' } })}\n`,
        );
      }
    };
    const events: string[] = [];
    const reflector = new Reflector<{ metadata?: { name?: string; resourceVersion?: string } }>({
      name: 'secrets',
      listerWatcher: createListerWatcher(kubeConfig(base), path),
      backoff: { baseMs: 5, maxMs: 20 },
      handlers: {
        onAdd: (o) => events.push(`add ${o.metadata?.name ?? ''}`),
        onDelete: (o, unknown) =>
          events.push(`delete ${o.metadata?.name ?? ''}${unknown ? ' (relist)' : ''}`),
      },
    });
    reflector.start();
    await reflector.waitForSync();
    const deadline = Date.now() + 5_000;
    while (reflector.lastSyncResourceVersion() !== '20' || openWatches.length < 2) {
      assert.ok(Date.now() < deadline, `stuck at rv ${reflector.lastSyncResourceVersion()}`);
      await new Promise((r) => setTimeout(r, 2));
    }
    assert.deepEqual(events, ['add a', 'add b', 'delete a (relist)', 'delete b (relist)']);
    await reflector.stop();
  });
});
