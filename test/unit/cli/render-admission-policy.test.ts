import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseAllDocuments } from 'yaml';

const rtb = (...args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'render', 'admission-policy', ...args], {
    encoding: 'utf8',
  });
const SEED = 'test/fixtures/seed-config.json';

test('rtb render admission-policy prints the parameters, the policy and the binding from the config', () => {
  const r = rtb(
    '--config',
    SEED,
    '--revision',
    'set-1',
    '--landscape',
    'eu10',
    '--trust-bundle-name',
    'ctb:2',
  );
  assert.equal(r.status, 0, r.stderr);
  const docs = parseAllDocuments(r.stdout).map((d) => d.toJS() as Record<string, unknown>);
  assert.deepEqual(
    docs.map((d) => d.kind),
    ['ConfigMap', 'MutatingAdmissionPolicy', 'MutatingAdmissionPolicyBinding'],
  );
  const data = docs[0]?.data as Record<string, string>;
  assert.equal(data.revision, 'set-1');
  assert.equal(data.landscape, 'eu10', '--landscape as rtb webhook --landscape');
  assert.equal(data.trustBundleName, 'ctb:2');
  assert.equal(docs[1]?.apiVersion, 'admissionregistration.k8s.io/v1');
});

test('--api-version v1beta1, --namespace and -o json', () => {
  const r = rtb('--config', SEED, '--api-version', 'v1beta1', '--namespace', 'rtb', '-o', 'json');
  assert.equal(r.status, 0, r.stderr);
  const list = JSON.parse(r.stdout) as {
    kind: string;
    items: { apiVersion: string; metadata: { namespace?: string } }[];
  };
  assert.equal(list.kind, 'List');
  assert.deepEqual(
    list.items.map((i) => i.apiVersion),
    ['v1', 'admissionregistration.k8s.io/v1beta1', 'admissionregistration.k8s.io/v1beta1'],
  );
  assert.equal(list.items[0]?.metadata.namespace, 'rtb');
  assert.notEqual(rtb('--config', SEED, '--api-version', 'v2').status, 0);
});

test('a config the webhook refuses, or a field the policy cannot carry, is refused naming the field; nothing printed', () => {
  const dir = mkdtempSync(join(tmpdir(), 'rtb-map-'));
  const bad = join(dir, 'bad.json');
  writeFileSync(bad, JSON.stringify({ availableFeatures: ['rt-cfg.kyma-project.io/bogus'] }));
  const r = rtb('--config', bad);
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /invalid config: availableFeatures\[0\]: unknown feature/);
  assert.equal(r.stdout, '');
  const many = join(dir, 'many.json');
  writeFileSync(
    many,
    JSON.stringify({
      overrides: Object.fromEntries(Array.from({ length: 65 }, (_, i) => [`r${i}.io`, 'ghcr.io'])),
    }),
  );
  const m = rtb('--config', many);
  assert.notEqual(m.status, 0);
  assert.match(m.stderr, /overrides: 65 usable overrides/);
  assert.equal(m.stdout, '');
  const hash = rtb('--config', SEED, '--trust-bundle-hash', 'nope');
  assert.match(hash.stderr, /trustBundleHash: must be 64 lowercase hex digits/);
});
