import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { describe, test } from 'node:test';
import { Registry } from 'prom-client';
import {
  ATTESTATION_PATH,
  refKey,
  type Attestation,
  type AttestationAnswer,
  type ManagedRef,
} from '../../../src/api/attestation.js';
import { KubeApiError } from '../../../src/kube/kube-errors.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import {
  RuntimeAttestor,
  RuntimeAttestorError,
  type RuntimeAttestorOptions,
} from '../../../src/drift/attestor.js';
import { captureLogs } from '../../support/log-capture.js';
import { ManualSleep } from '../../support/manual-sleep.js';
import { useScriptedListener, ScriptedServer, type ScriptedAnswer } from './scripted-server.js';
import { metricValue, waitFor } from './tls-fixtures.js';

const deployment: ManagedRef = {
  apiVersion: 'apps/v1',
  kind: 'Deployment',
  namespace: 'kyma-system',
  name: 'rt-bootstrapper-controller-manager',
};
const role: ManagedRef = {
  apiVersion: 'rbac.authorization.k8s.io/v1',
  kind: 'ClusterRole',
  namespace: '',
  name: 'rt-bootstrapper-manager-role',
};
const missing: ManagedRef = { apiVersion: 'v1', kind: 'Secret', namespace: 'kyma-system', name: 'gone' };
const forbidden: ManagedRef = { apiVersion: 'v1', kind: 'Service', namespace: 'kyma-system', name: 'hidden' };

/** The runtime as the injected reader sees it. */
const runtime = new Map<string, string>([
  [refKey(deployment), '4711'],
  [refKey(role), '815'],
]);
const readVersion = (ref: ManagedRef): Promise<string> => {
  if (ref.name === 'hidden') return Promise.reject(new KubeApiError('forbidden', { statusCode: 403 }));
  const v = runtime.get(refKey(ref));
  return v === undefined
    ? Promise.reject(new KubeApiError('not found', { statusCode: 404 }))
    : Promise.resolve(v);
};

const ok = (answer: AttestationAnswer): ScriptedAnswer => ({
  status: 200,
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(answer),
});

/** Records the attestor's waits and lets the test end each one. */
class Waits extends ManualSleep {
  /** Waits until the attestor waits for the `n`-th time (1-based), then ends that wait. */
  async pass(n: number): Promise<number> {
    await waitFor(() => this.asked.length >= n, `wait #${n}`);
    const ms = this.asked[n - 1]!;
    this.wake();
    return ms;
  }
}

describe('RuntimeAttestor', () => {
  const l = useScriptedListener('attestor');

  const attestor = async (
    answer: ScriptedServer['answer'],
    opts: Partial<RuntimeAttestorOptions> = {},
  ): Promise<{ a: RuntimeAttestor; waits: Waits; registry: Registry }> => {
    await l.stopClients();
    l.server.seen.length = 0;
    l.server.answer = answer;
    const registry = new Registry();
    const waits = new Waits();
    const a = new RuntimeAttestor({
      ...l.clientOptions(registry),
      readVersion,
      sleep: waits.sleep,
      random: () => 0,
      ...opts,
    });
    l.track(() => a.stop());
    a.start();
    return { a, waits, registry };
  };
  const sent = (n: number): Attestation => JSON.parse(l.server.seen[n - 1]!.body) as Attestation;

  test('the first attestation is empty; the refs of the answer are read and attested next time', async () => {
    const check = [deployment, role, missing, forbidden];
    const { waits, registry } = await attestor(
      (n) => ok({ inSync: n > 1, check: n === 1 ? check : [], nextAfterSeconds: 600, challenge: `c${n}` }),
      { random: () => 0.5, initialDelayMaxMs: 30_000 },
    );
    assert.equal(await waits.pass(1), 15_000, 'a uniform initial delay: half of the bound at 0.5');
    await waitFor(() => l.server.seen.length === 1, 'the first attestation');
    assert.deepEqual(sent(1), { objects: [] });
    assert.equal(l.server.seen[0]!.path, ATTESTATION_PATH);
    assert.equal(l.server.seen[0]!.cn, 'rt-1', 'over the drift channel’s client certificate');
    assert.equal(await waits.pass(2), 540_000, '600 s × 0.9');
    await waitFor(() => l.server.seen.length === 2, 'the second attestation');
    assert.equal(sent(2).challenge, 'c1', 'the previous answer’s challenge, echoed');
    assert.deepEqual(sent(2).objects, [
      { ...deployment, resourceVersion: '4711' },
      { ...role, resourceVersion: '815' },
      // Absent or unreadable: attested as '' (the KCP re-applies).
      { ...missing, resourceVersion: '' },
      { ...forbidden, resourceVersion: '' },
    ]);
    await waits.pass(3);
    await waitFor(() => l.server.seen.length === 3, 'the third attestation');
    assert.deepEqual(sent(3), { objects: [], challenge: 'c2' }, 'the list of the last answer');
    assert.equal(await metricValue(registry, 'rtb_attestations_total', { result: 'out_of_sync' }), 1);
    assert.ok((await metricValue(registry, 'rtb_attestations_total', { result: 'in_sync' })) >= 1);
    const last = await metricValue(registry, 'rtb_attestation_last_success_timestamp_seconds');
    assert.ok(Math.abs(last - Date.now() / 1000) < 3600, `a Unix time in seconds: ${last}`);
  });

  test('failures are retried with backoff on the same list; Retry-After is honoured', async () => {
    const { waits, registry } = await attestor(
      (n) => {
        if (n === 2) return { status: 503, headers: { 'retry-after': '7' } };
        if (n === 3) return { status: 503 };
        if (n === 4) return { status: 429, headers: { 'retry-after': '1' } };
        return ok({ inSync: true, check: [deployment], nextAfterSeconds: 60 });
      },
      { backoff: { baseMs: 1000, maxMs: 300_000 } },
    );
    assert.equal(await waits.pass(1), 0);
    assert.equal(await waits.pass(2), 48_000, 'at random 0, 0.8 of the 60 s asked');
    assert.equal(await waits.pass(3), 7000, 'Retry-After: 7, longer than the backoff (1 s)');
    assert.equal(await waits.pass(4), 2000, 'the backoff, doubled');
    assert.equal(await waits.pass(5), 4000, 'Retry-After: 1 is shorter than the backoff (4 s)');
    assert.equal(await waits.pass(6), 48_000, 'answered: back to the KCP’s period');
    await waitFor(() => l.server.seen.length === 6, 'the attestation after the recovery');
    for (let n = 2; n <= 6; n++)
      assert.deepEqual(sent(n).objects, [{ ...deployment, resourceVersion: '4711' }], `attestation ${n}`);
    assert.equal(await metricValue(registry, 'rtb_attestations_total', { result: 'failed' }), 3);
    assert.equal(await waits.pass(7), 48_000, 'the backoff was reset by the success');
  });

  test('an answer that is not JSON, or too long, counts as failed and keeps the list', async () => {
    const { waits, registry } = await attestor(
      (n) => {
        if (n === 2) return { status: 200, body: '<html>proxy error</html>' };
        if (n === 3) return { status: 200, body: ' '.repeat(300 * 1024) };
        return ok({ inSync: false, check: [role], nextAfterSeconds: 60 });
      },
      { backoff: { baseMs: 1000, maxMs: 300_000 } },
    );
    await waits.pass(1);
    await waits.pass(2);
    assert.equal(await waits.pass(3), 1000, 'the backoff');
    assert.equal(await waits.pass(4), 2000, 'the backoff, doubled');
    await waitFor(() => l.server.seen.length === 4, 'the fourth attestation');
    // Its answer is counted when the attestor settles it: just before it waits again.
    await waitFor(() => waits.asked.length >= 5, 'the wait after the fourth attestation');
    for (let n = 2; n <= 4; n++)
      assert.deepEqual(sent(n).objects, [{ ...role, resourceVersion: '815' }], `attestation ${n}`);
    assert.equal(await metricValue(registry, 'rtb_attestations_total', { result: 'failed' }), 2);
    assert.equal(await metricValue(registry, 'rtb_attestations_total', { result: 'out_of_sync' }), 2);
  });

  test('a refusal (4xx) waits the longest backoff and is logged once, without key material', async () => {
    const { logger, raw: lines } = captureLogs();
    const { waits, registry } = await attestor(() => ({ status: 404 }), {
      logger,
      backoff: { baseMs: 1000, maxMs: 300_000 },
    });
    await waits.pass(1);
    assert.equal(await waits.pass(2), 300_000);
    assert.equal(await waits.pass(3), 300_000);
    await waitFor(() => waits.asked.length === 4, 'the third refusal');
    assert.equal(await metricValue(registry, 'rtb_attestations_total', { result: 'failed' }), 3);
    const refused = lines.filter((l) => l.includes('refused the attestation'));
    assert.equal(refused.length, 1, 'one line for three refusals');
    assert.ok(refused[0]!.includes('"status":404'));
    const key = (await readFile(l.files.keyFile, 'utf8')).split('\n')[1]!;
    assert.ok(!lines.join('').includes(key) && !lines.join('').includes('PRIVATE KEY'));
  });

  test('stop() aborts the request in flight and ends the loop', { timeout: 30_000 }, async () => {
    // A timeout far beyond the test's: only the abort can end this request in time.
    const { a, waits, registry } = await attestor(() => 'hold', { timeoutMs: 3_600_000 });
    await waits.pass(1);
    await waitFor(() => l.server.seen.length === 1, 'the held attestation');
    const res = l.server.seen[0]!.res;
    const closed = new Promise<void>((resolve) =>
      res.on('close', () => {
        resolve();
      }),
    );
    await a.stop();
    await closed;
    assert.ok(!res.writableEnded, 'the server never answered');
    assert.equal(waits.asked.length, 1, 'no wait after the stop');
    assert.equal(await metricValue(registry, 'rtb_attestations_total', { result: 'failed' }), 0);
  });

  test('stop() ends reads that do not return', { timeout: 30_000 }, async () => {
    let reading = false;
    const { a, waits } = await attestor(
      () => ok({ inSync: false, check: [deployment], nextAfterSeconds: 60 }),
      {
        readVersion: () => {
          reading = true;
          return new Promise<string>(() => undefined);
        },
        timeoutMs: 3_600_000,
      },
    );
    await waits.pass(1);
    await waits.pass(2);
    await waitFor(() => reading, 'the read of the answer’s list');
    await a.stop();
    assert.equal(l.server.seen.length, 1, 'nothing sent after the stop');
  });

  test('stop() ends the initial delay (the default timer)', { timeout: 30_000 }, async () => {
    await l.stopClients();
    l.server.answer = () => ok({ inSync: true, check: [], nextAfterSeconds: 60 });
    l.server.seen.length = 0;
    const a = new RuntimeAttestor({
      url: l.url,
      tls: l.files,
      logger: silentLogger(),
      readVersion,
      initialDelayMaxMs: 3_600_000,
      random: () => 0.5,
    });
    a.start();
    await a.stop();
    assert.equal(l.server.seen.length, 0);
  });

  test('reads that outlast the timeout are attested as empty', async () => {
    const { waits } = await attestor(
      () => ok({ inSync: false, check: [deployment, role], nextAfterSeconds: 60 }),
      {
        readVersion: (ref) =>
          ref.kind === 'ClusterRole' ? new Promise<string>(() => undefined) : readVersion(ref),
        // Also the POST's limit: generous, the handshake must not fail on a busy machine.
        timeoutMs: 2000,
      },
    );
    await waits.pass(1);
    await waits.pass(2);
    await waitFor(() => l.server.seen.length === 2, 'the second attestation');
    assert.deepEqual(sent(2).objects, [
      { ...deployment, resourceVersion: '4711' },
      { ...role, resourceVersion: '' },
    ]);
  });

  test('a standby replica attests once for the list, then only in its turn, and then at once', async () => {
    let active = false;
    const { waits } = await attestor(() => ok({ inSync: true, check: [deployment], nextAfterSeconds: 60 }), {
      isActive: () => active,
      standbyCheckMs: 15_000,
    });
    await waits.pass(1);
    await waitFor(() => l.server.seen.length === 1, 'the first attestation, for the list');
    assert.deepEqual(sent(1), { objects: [] });
    assert.equal(await waits.pass(2), 48_000, 'the wait the answer asked for');
    assert.equal(await waits.pass(3), 15_000, 'not its turn: it looks again later');
    // The turn comes while it waits (it looks only once a wait ends).
    await waitFor(() => waits.asked.length === 4, 'the next look');
    assert.equal(waits.asked[3], 15_000, 'still not its turn');
    assert.equal(l.server.seen.length, 1, 'a standby sends nothing more');
    active = true;
    await waits.pass(4);
    await waitFor(() => l.server.seen.length === 2, 'the attestation once active');
    assert.deepEqual(sent(2).objects, [{ ...deployment, resourceVersion: '4711' }], 'the list it kept');
    // Looked at only once the next wait ends.
    active = false;
    assert.equal(await waits.pass(5), 48_000, 'then at the answer’s pace');
    assert.equal(await waits.pass(6), 15_000, 'no longer its turn');
    assert.equal(l.server.seen.length, 2);
  });

  test('misconfiguration is refused at construction', () => {
    const base = { tls: l.files, logger: silentLogger(), readVersion };
    assert.throws(() => new RuntimeAttestor({ ...base, url: 'http://127.0.0.1:1' }), RuntimeAttestorError);
    assert.throws(() => new RuntimeAttestor({ ...base, url: 'not a url' }), RuntimeAttestorError);
    assert.throws(
      () => new RuntimeAttestor({ url: l.url, tls: l.files, logger: silentLogger() }),
      RuntimeAttestorError,
      'neither a reader nor the cluster access',
    );
    assert.throws(
      () => new RuntimeAttestor({ ...base, url: l.url, readConcurrency: 0 }),
      RuntimeAttestorError,
    );
  });
});
