import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Counter, Registry } from 'prom-client';
import { MetricsServer } from '../../../src/telemetry/metrics-endpoint.js';
import { silentLogger } from '../../../src/telemetry/logger.js';

describe('MetricsServer', () => {
  const registry = new Registry();
  new Counter({ name: 'rtb_test_total', help: 'a test counter', registers: [registry] }).inc(3);
  const server = new MetricsServer({ registry, host: '127.0.0.1', port: 0, logger: silentLogger() });
  let base = '';
  before(async () => {
    base = `http://127.0.0.1:${String(await server.listen())}`;
  });
  after(async () => {
    await server.close();
  });

  test('GET /metrics: the registry in the text format', async () => {
    const res = await fetch(`${base}/metrics`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), registry.contentType);
    assert.match(await res.text(), /^rtb_test_total 3$/m);
  });

  test('nothing else is served there', async () => {
    assert.equal((await fetch(`${base}/healthz`)).status, 404);
    assert.equal((await fetch(`${base}/mutate`, { method: 'POST', body: '{}' })).status, 404);
    assert.equal((await fetch(`${base}/metrics`, { method: 'POST', body: '{}' })).status, 405);
  });
});
