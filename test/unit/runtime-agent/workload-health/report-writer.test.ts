import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, beforeEach, describe, test } from 'node:test';
import {
  WORKLOADS_KEY,
  WORKLOAD_FIELD_MANAGER,
  readWorkloads,
  type WorkloadHealthReport,
} from '../../../../src/api/workload-health.js';
import type { ClusterAccess } from '../../../../src/kube/cluster-access.js';
import { silentLogger } from '../../../../src/telemetry/logger.js';
import { ReportWriter } from '../../../../src/runtime-agent/workload-health/report-writer.js';

interface Call {
  readonly url: URL;
  readonly body: { data?: Record<string, string> };
  readonly at: number;
}

let server: http.Server;
let access: ClusterAccess;
let calls: Call[] = [];
let failNext = 0;

const health = (pods: number): WorkloadHealthReport => ({
  v1: { pods, started: pods, failing: 0, failedPods: 0, samples: [] },
});
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function writer(report: () => WorkloadHealthReport, results: boolean[] = []): ReportWriter {
  return new ReportWriter({
    access,
    target: { namespace: 'kyma-system', name: 'status' },
    report,
    logger: silentLogger(),
    minGapMs: 100,
    retryBaseMs: 50,
    retryMaxMs: 200,
    onWrite: (ok) => results.push(ok),
  });
}

describe('the workload report writer', () => {
  before(async () => {
    server = http.createServer((req, res) => {
      let text = '';
      req.on('data', (c: Buffer) => (text += c.toString()));
      req.on('end', () => {
        calls.push({
          url: new URL(req.url ?? '/', 'http://x'),
          body: JSON.parse(text) as Call['body'],
          at: performance.now(),
        });
        if (failNext > 0) {
          failNext--;
          res
            .writeHead(500, { 'content-type': 'application/json' })
            .end('{"kind":"Status","code":500,"message":"boom"}');
        } else res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    access = {
      getCurrentCluster: () => ({ server: `http://127.0.0.1:${port}` }),
      applyToHTTPSOptions: async () => {},
    };
  });
  after(() => {
    server.close();
  });
  beforeEach(() => {
    calls = [];
    failNext = 0;
  });

  test('applies the report under its field manager, to the status ConfigMap', async () => {
    const w = writer(() => health(1));
    w.changed();
    await eventuallyTrue(() => w.lastWritten() !== undefined);
    await w.stop();
    assert.equal(calls.length, 1);
    const call = calls[0];
    assert.ok(call);
    assert.equal(call.url.pathname, '/api/v1/namespaces/kyma-system/configmaps/status');
    assert.equal(call.url.searchParams.get('fieldManager'), WORKLOAD_FIELD_MANAGER);
    assert.equal(call.url.searchParams.get('force'), 'true');
    assert.deepEqual(readWorkloads(call.body.data?.[WORKLOADS_KEY]), health(1));
    assert.deepEqual(Object.keys(call.body.data ?? {}), [WORKLOADS_KEY], 'no other key');
    assert.deepEqual(w.lastWritten(), health(1));
  });

  test('coalesces changes, keeps the gap, writes only what changed', async () => {
    let pods = 1;
    const w = writer(() => health(pods));
    for (let i = 0; i < 50; i++) {
      pods = i;
      w.changed();
    }
    await eventuallyTrue(() => calls.length > 0);
    await sleep(30);
    assert.equal(calls.length, 1, 'one write for many changes');
    w.changed();
    w.changed();
    await sleep(300);
    assert.equal(calls.length, 1, 'the same report is not written again');
    pods = 100;
    w.changed();
    await eventuallyTrue(() => calls.length === 2);
    const [first, second] = calls;
    assert.ok(first && second);
    assert.ok(second.at - first.at >= 95, 'the gap is kept');
    await w.stop();
  });

  test('retries a failed write with backoff', async () => {
    failNext = 3;
    const results: boolean[] = [];
    const w = writer(() => health(1), results);
    w.changed();
    await eventuallyTrue(() => results.includes(true));
    assert.deepEqual(results, [false, false, false, true]);
    const gaps = calls.slice(1).map((c, i) => c.at - (calls[i]?.at ?? 0));
    assert.ok(gaps[0] !== undefined && gaps[0] >= 45, `first retry after the base delay: ${gaps.join()}`);
    assert.ok(gaps[1] !== undefined && gaps[1] >= 95, `then doubled: ${gaps.join()}`);
    await w.stop();
  });

  test('writes nothing once stopped', async () => {
    const w = writer(() => health(3));
    w.changed();
    await w.stop();
    w.changed();
    await sleep(150);
    assert.equal(calls.length, 0);
  });
});

async function eventuallyTrue(f: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !f(); i++) await sleep(10);
  assert.ok(f(), 'in time');
}
