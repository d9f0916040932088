import { CoreV1Api } from '@kubernetes/client-node';
import fc from 'fast-check';
import assert from 'node:assert/strict';
import { Agent } from 'node:https';
import { writeFile } from 'node:fs/promises';
import { Writable } from 'node:stream';
import { connect } from 'node:tls';
import { after, before, describe, test } from 'node:test';
import { issueCertificate } from '../../src/pki/issue-certificate.js';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { useControlPlane } from '../support/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { podReview, seedConfigText, seedPodBefore } from '../support/fixtures.js';
import { heldCall, httpsCall, type Reply } from '../support/https-call.js';
import { startTestWebhook, type TestWebhook } from '../support/webhook.js';
import { BODY_LIMIT_BYTES } from '../../src/api/serving-limits.js';

const plane = useControlPlane({ clusters: ['runtime'] });
const SECRET_MARKER = 'c3VwZXItc2VjcmV0LXB1bGwtdG9rZW4=';
let webhook: TestWebhook;
const logLines: string[] = [];

const post = (path: string, body: string | Buffer, method = 'POST'): Promise<Reply> =>
  httpsCall({ port: webhook.app.port, caPem: webhook.ca.certPem, path, body, method });

const review = podReview;

/** Pods of every shape, valid and not, for the fuzz tests. */
const pod = fc.oneof(
  fc.anything(),
  fc.record({
    metadata: fc.oneof(
      fc.anything(),
      fc.record({ annotations: fc.dictionary(fc.string(), fc.oneof(fc.string(), fc.constant('true'))) }),
    ),
    spec: fc.oneof(
      fc.anything(),
      fc.record({
        containers: fc.oneof(
          fc.anything(),
          fc.array(
            fc.record({
              name: fc.string(),
              image: fc.oneof(fc.string(), fc.anything()),
              env: fc.anything(),
            }),
          ),
        ),
        volumes: fc.anything(),
        imagePullSecrets: fc.anything(),
      }),
    ),
  }),
);

describe('the webhook server', () => {
  before(async () => {
    const cluster = plane().cluster('runtime');
    const core = cluster.kubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'kyma-system' } } });
    await core.createNamespacedSecret({
      namespace: 'kyma-system',
      body: { metadata: { name: 'registry-credentials' }, type: 'Opaque', data: { token: SECRET_MARKER } },
    });
    await core.createNamespacedConfigMap({
      namespace: 'kyma-system',
      body: {
        metadata: { name: 'rt-bootstrapper-config' },
        data: { 'rt-bootstrapper-config.json': seedConfigText() },
      },
    });
    const sink = new Writable({
      write(chunk: Buffer, _enc, cb) {
        logLines.push(...chunk.toString().split('\n').filter(Boolean));
        cb();
      },
    });
    webhook = await startTestWebhook(cluster, {
      logger: createLogger({ level: 'debug', destination: sink }),
    });
  });
  after(async () => {
    await webhook.stop();
  });

  test('answers a seed Pod with the uid echoed and a JSONPatch', async () => {
    const reply = await post('/mutate', review(seedPodBefore(), { uid: 'abc-123' }));
    assert.equal(reply.status, 200);
    const body = JSON.parse(reply.body) as {
      response: { uid: string; allowed: boolean; patchType: string; patch: string };
    };
    assert.equal(body.response.uid, 'abc-123');
    assert.equal(body.response.allowed, true);
    assert.equal(body.response.patchType, 'JSONPatch');
    const ops = JSON.parse(Buffer.from(body.response.patch, 'base64').toString()) as {
      op: string;
      path: string;
    }[];
    assert.ok(
      ops.some((o) => o.path.startsWith('/spec/containers/0/image') || o.path === '/spec/containers'),
    );
  });

  test('a malformed AdmissionReview gets HTTP 400 with the reason', async () => {
    const notJson = await post('/mutate', '{"apiVersion":');
    assert.equal(notJson.status, 400);
    assert.match(notJson.body, /not JSON/);
    const noUid = await post('/mutate', review({}, { uid: '' }));
    assert.equal(noUid.status, 400);
    assert.match(noUid.body, /request\.uid/);
    const wrongKind = await post('/mutate', JSON.stringify({ apiVersion: 'v1', kind: 'Pod' }));
    assert.equal(wrongKind.status, 400);
    assert.match(wrongKind.body, /apiVersion|kind/);
  });

  test('an oversized body gets 413; wrong method 405; unknown path 404, POST or GET', async () => {
    const big = Buffer.alloc(BODY_LIMIT_BYTES + 1, 0x20);
    assert.equal((await post('/mutate', big)).status, 413);
    assert.equal((await post('/mutate', '', 'GET')).status, 405);
    assert.equal((await post('/nope', '', 'GET')).status, 404);
    assert.equal((await post('/nope', '{}')).status, 404);
  });

  test('health, readiness and metrics', async () => {
    assert.equal((await post('/healthz', '', 'GET')).status, 200);
    assert.equal((await post('/readyz', '', 'GET')).status, 200);
    const metrics = await post('/metrics', '', 'GET');
    assert.match(metrics.body, /rtb_webhook_requests_total\{result="bad_request"\} \d+/);
    assert.match(metrics.body, /rtb_webhook_request_duration_seconds_bucket/);
    assert.match(
      metrics.body,
      /rtb_webhook_mutations_total\{feature="rt-cfg.kyma-project.io\/set-fips-mode"\}/,
    );
    assert.match(metrics.body, /rtb_webhook_config_reloads_total\{result="success"\} 1/);
  });

  test('fuzz: random and malformed AdmissionReviews all get an answer and the process stays up', async () => {
    const body = fc.oneof(
      fc.string(),
      fc.json(),
      pod.map((p) => review(p, { operation: 'CREATE' })),
      pod.map((p) => review(p, { operation: 'UPDATE', oldObject: p })),
      pod.map((p) => review(p, { subResource: 'ephemeralcontainers', operation: 'UPDATE' })),
    );
    const samples = fc.sample(body, { numRuns: 400, seed: 42 });
    let ok = 0;
    let bad = 0;
    for (const b of samples) {
      const reply = await post('/mutate', b);
      assert.ok(
        reply.status === 200 || reply.status === 400,
        `status ${reply.status} for ${b.slice(0, 200)}`,
      );
      if (reply.status === 200) {
        const parsed = JSON.parse(reply.body) as { response: { uid: string; allowed: boolean } };
        assert.equal(parsed.response.uid, 'u-1');
        ok++;
      } else bad++;
    }
    assert.ok(ok > 50 && bad > 50, `both kinds were exercised (${ok} answered, ${bad} refused)`);
    assert.equal((await post('/healthz', '', 'GET')).status, 200);
  });

  test('fuzz, concurrently: malformed and valid requests at once over many connections; the valid ones answered as alone', async () => {
    const malformed = fc.sample(
      fc.oneof(
        fc.string(),
        fc.json(),
        pod.map((p) => review(p, { uid: 'u-1' })),
        pod.map((p) => review(p, { operation: 'UPDATE', oldObject: p, uid: 'u-1' })),
        fc.nat(64).map((n) => review(seedPodBefore(), { namespace: 'n'.repeat(64 + n) })),
        fc.nat(3).map((n) => `${'['.repeat(10_000 * (n + 1))}${']'.repeat(10_000 * (n + 1))}`),
      ),
      { numRuns: 400, seed: 43 },
    );
    const alone = JSON.parse((await post('/mutate', review(seedPodBefore(), { uid: 'alone' }))).body) as {
      response: { patch: string };
    };
    const agent = new Agent({ keepAlive: true, maxSockets: 32 });
    const jobs: (() => Promise<void>)[] = [];
    const statuses = new Map<number, number>();
    let valid = 0;
    malformed.forEach((body, i) => {
      jobs.push(async () => {
        const reply = await httpsCall({
          port: webhook.app.port,
          caPem: webhook.ca.certPem,
          path: '/mutate',
          body,
          // Every other one on a connection of its own.
          ...(i % 2 === 0 ? { agent } : {}),
        });
        assert.ok([200, 400].includes(reply.status), `status ${reply.status} for ${body.slice(0, 200)}`);
        statuses.set(reply.status, (statuses.get(reply.status) ?? 0) + 1);
      });
      if (i % 4 === 0)
        jobs.push(async () => {
          const uid = `valid-${i}`;
          const reply = await httpsCall({
            port: webhook.app.port,
            caPem: webhook.ca.certPem,
            path: '/mutate',
            body: review(seedPodBefore(), { uid }),
            agent,
          });
          assert.equal(reply.status, 200);
          const answer = JSON.parse(reply.body) as { response: { uid: string; patch: string } };
          assert.equal(answer.response.uid, uid);
          assert.equal(answer.response.patch, alone.response.patch);
          valid++;
        });
    });
    // 64 at a time, in the order made.
    const running = new Set<Promise<void>>();
    for (const job of jobs) {
      const p: Promise<void> = job().finally(() => running.delete(p));
      running.add(p);
      if (running.size >= 64) await Promise.race(running);
    }
    await Promise.all(running);
    agent.destroy();
    assert.equal(valid, 100);
    assert.ok((statuses.get(200) ?? 0) > 50 && (statuses.get(400) ?? 0) > 50, JSON.stringify([...statuses]));
    assert.equal((await post('/healthz', '', 'GET')).status, 200);
  });

  test('refuses TLS below 1.2', async () => {
    const result = await new Promise<string>((resolve) => {
      const socket = connect({
        host: '127.0.0.1',
        port: webhook.app.port,
        ca: webhook.ca.certPem,
        maxVersion: 'TLSv1.1',
        minVersion: 'TLSv1',
      });
      socket.on('secureConnect', () => {
        socket.destroy();
        resolve('connected');
      });
      socket.on('error', (e: Error) => {
        resolve(e.message);
      });
    });
    assert.notEqual(result, 'connected');
  });

  test('a renewed certificate is served to new connections without a restart', async () => {
    const serial = (): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = connect(
          { host: '127.0.0.1', port: webhook.app.port, rejectUnauthorized: false },
          () => {
            resolve(socket.getPeerCertificate().serialNumber);
            socket.destroy();
          },
        );
        socket.on('error', reject);
      });
    const before = await serial();
    const ca = await createCertificateAuthority({ commonName: 'renewed-ca' });
    const next = await issueCertificate(ca, {
      commonName: 'renewed',
      ipAddresses: ['127.0.0.1'],
      usage: 'server',
    });
    // Key first, then certificate: between the two writes the pair does not match and the old one stays.
    await writeFile(webhook.keyFile, next.keyPem);
    await writeFile(webhook.certFile, next.certPem);
    const expected = next.certificate.serialNumber.toUpperCase().replace(/^0+/, '');
    await eventually(
      async () => ((await serial()).toUpperCase().replace(/^0+/, '') === expected ? true : undefined),
      15_000,
      'the new certificate',
    );
    assert.notEqual(before, expected);
  });

  test('no log line carries the pull Secret contents', async () => {
    const core = plane().cluster('runtime').kubeConfig().makeApiClient(CoreV1Api);
    await core.createNamespace({ body: { metadata: { name: 'log-check' } } });
    await eventually(
      async () =>
        (await core.readNamespacedSecret({ name: 'registry-credentials', namespace: 'log-check' })).data,
      15_000,
      'a copy',
    );
    assert.ok(
      logLines.some((l) => l.includes('pull Secret copy written')),
      'the copy was logged',
    );
    assert.ok(!logLines.some((l) => l.includes(SECRET_MARKER)), 'no line holds the secret');
  });
});

describe('graceful shutdown', () => {
  test('SIGTERM-style stop answers the request in flight, then refuses new connections', async () => {
    const drained = await startTestWebhook(plane().cluster('runtime'));
    const body = review(seedPodBefore(), { uid: 'in-flight' });
    const held = heldCall(
      { port: drained.app.port, caPem: drained.ca.certPem, path: '/mutate', body },
      Math.floor(body.length / 2),
    );
    // The rest arrives after the stop has begun.
    setTimeout(held.finish, 300);
    const reply = held.reply;
    await new Promise((r) => setTimeout(r, 100));
    const stopped = drained.stop();
    const answer = await reply;
    await stopped;
    assert.equal(answer.status, 200);
    assert.match(answer.body, /"uid":"in-flight"/);
    await assert.rejects(
      new Promise((resolve, reject) => {
        const s = connect({ host: '127.0.0.1', port: drained.app.port, rejectUnauthorized: false }, () => {
          s.destroy();
          resolve(undefined);
        });
        s.on('error', reject);
      }),
      /ECONNREFUSED/,
    );
  });
});
