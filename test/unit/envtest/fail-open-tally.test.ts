import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { parseFailOpens, sumFailOpens } from '../../../src/envtest/fail-open-tally.js';

describe('the fail-open tally', () => {
  test('reads the counts per webhook name from /metrics, zero series left out', () => {
    const metrics = [
      '# HELP apiserver_admission_webhook_fail_open_count [ALPHA] Admission webhook fail open count',
      '# TYPE apiserver_admission_webhook_fail_open_count counter',
      'apiserver_admission_webhook_fail_open_count{name="a.example.com",type="admit"} 2',
      'apiserver_admission_webhook_fail_open_count{type="validating",name="b.example.com"} 1',
      'apiserver_admission_webhook_fail_open_count{name="a.example.com",type="validating"} 1',
      'apiserver_admission_webhook_fail_open_count{name="c.example.com",type="admit"} 0',
      'apiserver_admission_webhook_fail_open_count_other{name="d.example.com"} 7',
      'apiserver_admission_webhook_request_total{name="a.example.com",code="200"} 40',
    ].join('\n');
    assert.deepEqual(parseFailOpens(metrics), { 'a.example.com': 3, 'b.example.com': 1 });
    assert.deepEqual(parseFailOpens(''), {});
  });

  test('sums the records of every control plane a test file stopped; a torn line is skipped', () => {
    const tally = [
      JSON.stringify({ cluster: 'runtime', webhooks: { 'a.example.com': 2 } }),
      JSON.stringify({ cluster: 'runtime', webhooks: { 'a.example.com': 1, 'b.example.com': 4 } }),
      '{"cluster":"kcp","webh',
      '',
    ].join('\n');
    assert.deepEqual(sumFailOpens(tally), { 'a.example.com': 3, 'b.example.com': 4 });
  });
});
