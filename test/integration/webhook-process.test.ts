// `rtb webhook` as its own process, as the kubelet runs it: a start that fails exits at once with
// the reason on one line; SIGTERM drains without losing a request that reached it, and exits 0.
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:https';
import { createServer, connect as tcpConnect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort } from '../../src/envtest/free-port.js';
import type { CertificateAuthority } from '../../src/pki/certificate-authority.js';
import { TERMINATION_GRACE_SECONDS } from '../../src/api/serving-limits.js';
import { useControlPlane } from '../support/control-plane.js';
import { writeServingFiles } from '../support/serving-files.js';
import { putSeedConfig } from '../support/webhook-runtime.js';
import { eventually } from '../../src/envtest/eventually.js';
import { podReview, seedPodBefore } from '../support/fixtures.js';
import { httpsCall } from '../support/https-call.js';
import { spawnWebhookProcess, type WebhookProcess } from '../support/webhook-process.js';

const plane = useControlPlane({ clusters: ['runtime'] });
let dir = '';
let ca: CertificateAuthority;
let certFile = '';
let keyFile = '';

/** `rtb webhook` on the runtime cluster with the serving files of `before`, on `port`. */
const spawnWebhook = (port: number, extraArgs: string[] = []): WebhookProcess =>
  spawnWebhookProcess({
    kubeconfigPath: plane().cluster('runtime').kubeconfigPath,
    certFile,
    keyFile,
    port,
    extraArgs,
  });

async function ready(w: WebhookProcess): Promise<void> {
  await eventually(
    async () =>
      (await httpsCall({ port: w.port, caPem: ca.certPem, path: '/readyz', method: 'GET' })).status === 200
        ? true
        : undefined,
    60_000,
    `the webhook to be ready (stdout: ${w.output().slice(-1000)})`,
  );
}

const review = (uid: string): string => podReview(seedPodBefore(), { uid });

interface Flood {
  /** Requests answered in full, and of those after SIGTERM with `Connection: close`. */
  answered: number;
  closedAfterTerm: number;
  /** Requests that got no answer on a connection the server had accepted (TLS done), by error code. */
  failures: Record<string, number>;
  /**
   * Requests never sent, because their connection was not accepted: refused once the listener is
   * closed, or reset by the kernel from the listen queue, before the TLS handshake.
   */
  notAccepted: Record<string, number>;
}

/**
 * `connections` loops, each posting one AdmissionReview after another on a keep-alive Agent,
 * until the server refuses a connection (its listener is closed).
 */
function flood(
  port: number,
  connections: number,
  termed: () => boolean,
): { done: Promise<Flood>; count: () => number } {
  const agent = new Agent({ keepAlive: true, maxSockets: connections });
  const result: Flood = { answered: 0, closedAfterTerm: 0, failures: {}, notAccepted: {} };
  const secured = new WeakSet<object>();
  const count = (into: Record<string, number>, key: string): void => {
    into[key] = (into[key] ?? 0) + 1;
  };
  let n = 0;
  const one = (): Promise<'again' | 'stop'> =>
    new Promise((resolve) => {
      const uid = `flood-${n++}`;
      const body = review(uid);
      const req = request(
        {
          host: '127.0.0.1',
          port,
          path: '/mutate',
          method: 'POST',
          agent,
          ca: ca.certPem,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          let text = '';
          res.setEncoding('utf8');
          res.on('data', (c: string) => (text += c));
          res.on('end', () => {
            if (res.statusCode === 200 && text.includes(`"uid":"${uid}"`)) result.answered++;
            else count(result.failures, `status ${res.statusCode ?? 0}`);
            if (termed() && res.headers.connection === 'close') result.closedAfterTerm++;
            resolve('again');
          });
          res.on('error', (error: NodeJS.ErrnoException) => {
            count(result.failures, error.code ?? error.message);
            resolve('stop');
          });
        },
      );
      let accepted = false;
      req.on('socket', (socket) => {
        if (secured.has(socket)) accepted = true;
        else
          socket.once('secureConnect', () => {
            secured.add(socket);
            accepted = true;
          });
      });
      req.on('error', (error: NodeJS.ErrnoException) => {
        count(accepted ? result.failures : result.notAccepted, error.code ?? error.message);
        resolve('stop');
      });
      req.end(body);
    });
  const loops = Array.from({ length: connections }, async () => {
    while ((await one()) === 'again');
  });
  return {
    done: Promise.all(loops).then(() => {
      agent.destroy();
      return result;
    }),
    count: () => result.answered,
  };
}

describe('rtb webhook as its own process', () => {
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'rtb-webhook-process-'));
    ({ ca, certFile, keyFile } = await writeServingFiles(dir, 'webhook-process-test-ca'));
    await putSeedConfig(plane().cluster('runtime'));
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  describe('rtb webhook: a start that fails exits at once, non-zero, with the reason on one line', () => {
    const assertOneLineFailure = (w: WebhookProcess, code: number | null, reason: RegExp): void => {
      assert.notEqual(code, 0);
      assert.notEqual(code, null, 'exited on its own, not killed');
      const lines = w.stderr().trimEnd().split('\n');
      assert.equal(lines.length, 1, `one line: ${w.stderr()}`);
      assert.match(lines[0] ?? '', /^rtb: cannot start the webhook: /);
      assert.match(lines[0] ?? '', reason);
    };

    test('the port in use', async () => {
      const taken = createServer();
      await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
      const port = (taken.address() as { port: number }).port;
      try {
        const w = spawnWebhook(port);
        assertOneLineFailure(w, await w.exited(), /EADDRINUSE/);
      } finally {
        taken.close();
      }
    });

    test('an unparsable certificate', async () => {
      const bad = join(dir, 'bad.crt');
      await writeFile(bad, 'not a certificate\n');
      const w = spawnWebhook(await freePort(), [`--tls-cert=${bad}`]);
      assertOneLineFailure(w, await w.exited(), /serving certificate .*bad\.crt/);
    });

    test('a config file that is not there', async () => {
      const w = spawnWebhook(await freePort(), [`--config-file=${join(dir, 'absent.json')}`]);
      assertOneLineFailure(w, await w.exited(), /cannot read the config file: ENOENT/);
    });
  });

  describe('rtb webhook: SIGTERM drains', () => {
    test('a flood over many keep-alive connections: every request sent on an accepted connection is answered; exit 0', async () => {
      const w = spawnWebhook(await freePort(), ['--shutdown-delay=1s']);
      await ready(w);
      let termed = false;
      // 32 connections: more than a few, and fewer than the requests let in at once
      // (MAX_REQUESTS_IN_FLIGHT), so none waits in the gate and the drain finishes well inside its
      // deadline even on a loaded machine; the log says if the deadline cut any.
      const connections = 32;
      const load = flood(w.port, connections, () => termed);
      await eventually(() => (load.count() >= 300 ? true : undefined), 60_000, 'the flood to be under way');
      termed = true;
      w.child.kill('SIGTERM');
      const [result, code] = await Promise.all([load.done, w.exited(TERMINATION_GRACE_SECONDS * 1000)]);
      assert.equal(code, 0, w.output().slice(-2000));
      // Nothing sent on a connection the server had accepted was reset or left unanswered; the
      // flood ended on connections it no longer accepted.
      assert.deepEqual(result.failures, {}, `${JSON.stringify(result)}\n${w.output().slice(-3000)}`);
      assert.ok((result.notAccepted.ECONNREFUSED ?? 0) > 0, JSON.stringify(result));
      assert.ok(
        result.closedAfterTerm >= connections,
        `answers after SIGTERM closed their connections: ${JSON.stringify(result)}`,
      );
    });

    test('connections that never start a handshake, and idle keep-alive ones, do not hold the exit', async () => {
      const w = spawnWebhook(await freePort(), ['--shutdown-delay=0s']);
      await ready(w);
      const idle: Socket[] = [];
      for (let i = 0; i < 10; i++) {
        const s = tcpConnect(w.port, '127.0.0.1');
        s.on('error', () => undefined);
        idle.push(s);
      }
      const agent = new Agent({ keepAlive: true });
      const kept = await httpsCall({
        port: w.port,
        caPem: ca.certPem,
        path: '/mutate',
        body: review('kept'),
        agent,
      });
      assert.equal(kept.status, 200);
      w.child.kill('SIGTERM');
      // Before, they held it for Node's handshake timeout (120 s); the kubelet waits the grace period.
      assert.equal(await w.exited(TERMINATION_GRACE_SECONDS * 1000), 0, w.output().slice(-2000));
      for (const s of idle) s.destroy();
      agent.destroy();
    });
  });
});
