import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { packageVersion } from '../../../src/version.js';

const rtb = (...args: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { encoding: 'utf8' });

test('rtb --version prints the package version', () => {
  const r = rtb('--version');
  assert.equal(r.status, 0);
  assert.equal(r.stdout.trim(), packageVersion());
});

test('rtb --help lists the commands', () => {
  const r = rtb('--help');
  assert.equal(r.status, 0);
  for (const c of ['local', 'webhook', 'mutate', 'render', 'control-plane'])
    assert.match(r.stdout, new RegExp(`^  ${c}\\b`, 'm'));
});

test('an unknown command fails with a message', () => {
  const r = rtb('no-such-command');
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /unknown command/);
});

test('rtb controller refuses a mode it does not have, naming the choices, before starting', () => {
  const r = rtb('controller', '--mode', 'nope', '--pull-secret', 'p');
  assert.notEqual(r.status, 0);
  assert.match(r.stderr, /--mode <mode>' argument 'nope' is invalid\. Allowed choices are annotate, direct/);
});

test('rtb webhook still accepts --reuse-answers from earlier manifests, and no longer lists it', () => {
  const r = rtb(
    'webhook',
    '--reuse-answers',
    '512',
    '--config-file',
    '/nonexistent',
    '--kubeconfig',
    '/nonexistent',
  );
  assert.notEqual(r.status, 0);
  assert.doesNotMatch(r.stderr, /unknown option/);
  assert.match(
    r.stdout + r.stderr,
    /reuse-answers is accepted for manifests of earlier releases and ignored/,
  );
  assert.doesNotMatch(rtb('webhook', '--help').stdout, /reuse-answers/);
});

test('rtb render controller --manifests-config-map renders the watch and its read access (annotate mode only)', () => {
  const base = ['render', 'controller', '--pull-secret', 'pull', '--image', 'reg.example.com/rtb:1'];
  const watched = rtb(...base, '--manifests-config-map', 'runtime-bootstrapper-manifests');
  assert.equal(watched.status, 0, watched.stderr);
  assert.match(watched.stdout, /--manifests-config-map=runtime-bootstrapper-manifests/);
  assert.match(watched.stdout, /- runtime-bootstrapper-manifests/, 'named in the RBAC resourceNames');
  const direct = rtb(...base, '--mode', 'direct', '--manifests-config-map', 'runtime-bootstrapper-manifests');
  assert.equal(direct.status, 0, direct.stderr);
  assert.doesNotMatch(direct.stdout, /runtime-bootstrapper-manifests/, 'direct mode does not watch it');
  assert.doesNotMatch(rtb(...base).stdout, /manifests-config-map/);
});

test('rtb render kim refuses a version KIM cannot carry as a label, with the reason', () => {
  for (const [version, why] of [
    ['on', /takes it for a boolean/],
    ['1.2.0+build.5', /drop the "\+…" build metadata/],
    ['-rc', /begins and ends with a letter or digit/],
  ] as const) {
    const r = rtb('render', 'kim', '--version', version, '--image', 'reg.example.com/rtb:1');
    assert.notEqual(r.status, 0, version);
    assert.match(r.stderr, why, version);
    assert.equal(r.stdout, '', 'nothing half-rendered');
  }
  const ok = rtb('render', 'kim', '--version', '1.2.0-rc.1', '--image', 'reg.example.com/rtb:1');
  assert.equal(ok.status, 0, ok.stderr);
  assert.match(ok.stdout, /app.kubernetes.io\/version: 1.2.0-rc.1/);
});
