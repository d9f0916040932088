/**
 * `rtb controller --fips` as a process in the rtb image's own root filesystem (this host's node
 * has no FIPS provider; the image's has): direct mode installs a runtime against real API servers
 * with the KCP's CA, the webhook's serving certificate and the drift client certificate made in
 * FIPS mode, and serves the drift listener over mutual TLS 1.3 (docs/fips.md).
 */
import assert from 'node:assert/strict';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import type { RuntimeBootstrapper } from '../../src/api/runtime-bootstrapper.js';
import { runtimeBootstrapperCrd } from '../../src/api/runtime-bootstrapper-crd.js';
import { RUNTIME_NAMESPACE, WEBHOOK_TLS_SECRET } from '../../src/api/runtime-names.js';
import { eventually } from '../../src/envtest/eventually.js';
import { freePort } from '../../src/envtest/free-port.js';
import { resolveRtbImage } from '../../src/envtest/rtb-image.js';
import { ensureCrds } from '../../src/kube/crd.js';
import { kubeRequest } from '../../src/kube/kube-request.js';
import { WATCH_EVENT_PATH, encodeWatchEvent } from '../../src/drift/watch-event.js';
import { trackChild } from '../../src/envtest/process-registry.js';
import { useControlPlane } from '../support/control-plane.js';
import { tlsProtocol } from '../support/tls-protocol.js';
import { writeDriftClientFiles } from '../support/direct-fleet.js';
import { httpsCall } from '../support/https-call.js';
import {
  CTB_NAME,
  KCP_PULL_SECRET,
  RB_PATH,
  coreOf,
  createRuntimeBootstrapper,
  kubeconfigFor,
  markDeploymentAvailable,
  putAdminKubeconfigSecret,
  putSources,
} from '../support/kcp.js';

const plane = useControlPlane({ clusters: ['kcp', 'rt-f'] });
/** By path: the image's PATH, which the child gets, has no /usr/sbin. */
const CHROOT = '/usr/sbin/chroot';

/** The environment the image's config sets (what a container of it starts with). */
async function imageEnv(layoutDir: string): Promise<Record<string, string>> {
  const json = async (...path: string[]): Promise<unknown> =>
    JSON.parse(await readFile(join(layoutDir, ...path), 'utf8')) as unknown;
  const blob = (digest: string): Promise<unknown> => json('blobs', ...digest.split(':'));
  const index = (await json('index.json')) as { manifests: { digest: string }[] };
  const manifest = (await blob(index.manifests[0]?.digest ?? '')) as { config: { digest: string } };
  const config = (await blob(manifest.config.digest)) as { config: { Env?: string[] } };
  const pairs = (config.config.Env ?? []).map((e) => [
    e.slice(0, e.indexOf('=')),
    e.slice(e.indexOf('=') + 1),
  ]);
  return Object.fromEntries(pairs) as Record<string, string>;
}

describe('rtb controller --fips in the image, direct mode against real API servers', () => {
  let scratch: string;
  let rootfs: string;
  let env: Record<string, string>;
  let child: ChildProcess;
  let output = '';
  let driftPort: number;
  let metricsPort: number;
  // As the image's user, in its root filesystem, on this host's network (the API servers on loopback).
  const chrootRtb = (args: readonly string[]): string[] => [
    '--userspec=65532:65532',
    rootfs,
    '/usr/local/bin/rtb',
    ...args,
  ];

  before(async () => {
    const image = await resolveRtbImage();
    env = await imageEnv(image.layoutDir);
    scratch = await mkdtemp(join(tmpdir(), 'rtb-fips-rootfs-'));
    rootfs = join(scratch, 'rootfs');
    const unpacked = spawnSync(
      'umoci',
      ['raw', 'unpack', '--image', `${image.layoutDir}:${image.tag}`, rootfs],
      {
        encoding: 'utf8',
      },
    );
    assert.equal(unpacked.status, 0, unpacked.stderr);
    const kcp = plane().cluster('kcp');
    await ensureCrds(kcp.kubeConfig(), [runtimeBootstrapperCrd()]);
    await putSources(kcp);
    await putAdminKubeconfigSecret(kcp, plane().cluster('rt-f'), 'rt-f');
    await writeFile(join(rootfs, 'tmp', 'kcp.kubeconfig'), kcp.kubeconfig, { mode: 0o644 });
    driftPort = await freePort();
    metricsPort = await freePort();
    child = spawn(
      CHROOT,
      chrootRtb([
        'controller',
        '--mode=direct',
        '--fips',
        '--kubeconfig=/tmp/kcp.kubeconfig',
        `--pull-secret=${KCP_PULL_SECRET}`,
        `--cluster-trust-bundle=${CTB_NAME}`,
        '--no-leader-elect',
        '--metrics-host=127.0.0.1',
        `--metrics-port=${metricsPort}`,
        '--coalesce=200ms',
        `--drift-listen=127.0.0.1:${driftPort}`,
        `--drift-url=https://127.0.0.1:${driftPort}`,
        '--webhook-image=example.com/rtb:9.9.9',
      ]),
      { env, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    // Killed with this process if it ends early (a signal to the whole run): after() would not run.
    trackChild(child, CHROOT);
    child.stdout?.on('data', (c: Buffer) => (output += c.toString()));
    child.stderr?.on('data', (c: Buffer) => (output += c.toString()));
  });

  after(async () => {
    // `before` may have failed before the child or the folder existed.
    const running = child as ChildProcess | undefined;
    if (running !== undefined && running.exitCode === null && running.signalCode === null) {
      running.kill('SIGTERM');
      await new Promise((r) => running.once('exit', r));
    }
    if ((scratch as string | undefined) !== undefined) await rm(scratch, { recursive: true, force: true });
  });

  test("without the image's OpenSSL configuration, --fips refuses to start (exit 1)", () => {
    const run = spawnSync(CHROOT, chrootRtb(['controller', '--fips', '--pull-secret=x']), {
      env: { ...env, OPENSSL_CONF: '/nonexistent.cnf' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(run.status, 1, run.stderr);
    assert.match(run.stderr, /^rtb: --fips: FIPS mode is not in force: crypto\.getFips\(\) is 0/);
  });

  test('installs the runtime: CA, serving and drift client certificates made in FIPS mode; Ready', async () => {
    const kcp = plane().cluster('kcp').kubeConfig();
    const runtime = plane().cluster('rt-f');
    await createRuntimeBootstrapper(plane().cluster('kcp'), 'rt-f');
    await eventually(
      async () => {
        assert.equal(child.exitCode, null, `the controller exited:\n${output.slice(-3000)}`);
        const r = await kubeRequest<RuntimeBootstrapper>(kcp, { method: 'GET', path: `${RB_PATH}/rt-f` });
        if (r.status?.state === 'Installing') await markDeploymentAvailable(runtime).catch(() => undefined);
        return r.status?.state === 'Ready' ? r : undefined;
      },
      120_000,
      `Ready (controller output:\n${output.slice(-3000)})`,
    );
    const lines = output
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { msg?: string; fips?: unknown });
    assert.ok(
      lines.some((l) => l.msg?.startsWith('FIPS mode')),
      output.slice(-3000),
    );
    const secret = await coreOf(runtime).readNamespacedSecret({
      name: WEBHOOK_TLS_SECRET,
      namespace: RUNTIME_NAMESPACE,
    });
    const serving = new X509Certificate(Buffer.from(secret.data?.['tls.crt'] ?? '', 'base64'));
    assert.equal(serving.publicKey.asymmetricKeyType, 'ec');
    assert.equal(serving.publicKey.asymmetricKeyDetails?.namedCurve, 'prime256v1');
  });

  test('the drift listener: a report over mutual TLS 1.3 is taken; a TLS 1.2-only client is refused', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'rtb-fips-drift-'));
    try {
      const files = await writeDriftClientFiles(plane().cluster('rt-f'), dir);
      const [cert, key, ca] = await Promise.all(
        [files.certFile, files.keyFile, files.caFile].map((f) => readFile(f)),
      );
      const target = { port: driftPort, cert, key, ca };
      assert.equal(await tlsProtocol(target, 'TLSv1.3'), 'TLSv1.3');
      assert.match(await tlsProtocol(target, 'TLSv1.2'), /^refused: /);
      const reply = await httpsCall({
        port: driftPort,
        caPem: ca!.toString(),
        path: WATCH_EVENT_PATH,
        body: encodeWatchEvent({
          watched: { Namespace: RUNTIME_NAMESPACE, Name: 'registry-credentials' },
          watchedGvk: { group: '', version: 'v1', kind: 'Secret' },
        }),
        client: { certPem: cert!.toString(), keyPem: key!.toString() },
      });
      assert.equal(reply.status, 202, reply.body);
      await eventually(
        () => (output.includes('drift reported; re-syncing') ? true : undefined),
        30_000,
        'the report handled',
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  test("a webhook with --fips in the same root filesystem attests to the listener: the drift client's mutual TLS in FIPS mode too", async () => {
    const runtime = plane().cluster('rt-f');
    const dir = join(rootfs, 'tmp', 'rt');
    await writeDriftClientFiles(runtime, join(dir, 'drift'));
    const serving = await coreOf(runtime).readNamespacedSecret({
      name: WEBHOOK_TLS_SECRET,
      namespace: RUNTIME_NAMESPACE,
    });
    await writeFile(join(dir, 'tls.crt'), Buffer.from(serving.data?.['tls.crt'] ?? '', 'base64'));
    await writeFile(join(dir, 'tls.key'), Buffer.from(serving.data?.['tls.key'] ?? '', 'base64'), {
      mode: 0o644,
    });
    await writeFile(join(dir, 'kubeconfig'), await kubeconfigFor(runtime, 'rtb-webhook', ['system:masters']));
    let webhookOutput = '';
    const webhook = spawn(
      CHROOT,
      chrootRtb([
        'webhook',
        '--fips',
        '--kubeconfig=/tmp/rt/kubeconfig',
        '--tls-cert=/tmp/rt/tls.crt',
        '--tls-key=/tmp/rt/tls.key',
        '--host=127.0.0.1',
        `--port=${await freePort()}`,
        `--metrics-port=${await freePort()}`,
        `--drift-url=https://127.0.0.1:${driftPort}`,
        '--drift-cert=/tmp/rt/drift/tls.crt',
        '--drift-key=/tmp/rt/drift/tls.key',
        '--drift-ca=/tmp/rt/drift/ca.crt',
        '--no-trust-restart',
        '--shutdown-delay=0s',
      ]),
      {
        env: { ...env, POD_NAMESPACE: RUNTIME_NAMESPACE, POD_NAME: 'fips-webhook' },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    trackChild(webhook, CHROOT);
    webhook.stdout.on('data', (c: Buffer) => (webhookOutput += c.toString()));
    webhook.stderr.on('data', (c: Buffer) => (webhookOutput += c.toString()));
    try {
      // The attestor, on the runtime agent's leader, sends its first attestation within 30 s.
      const received = await eventually(
        async () => {
          assert.equal(webhook.exitCode, null, `the webhook exited:\n${webhookOutput.slice(-3000)}`);
          const metrics = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
          const counts = [...metrics.matchAll(/^rtb_attestations_received_total\{[^}]*\} (\d+)$/gm)];
          const total = counts.reduce((sum, m) => sum + Number(m[1]), 0);
          return total > 0 ? total : undefined;
        },
        120_000,
        `an attestation from the FIPS webhook (webhook output:\n${webhookOutput.slice(-3000)})`,
      );
      assert.ok(received > 0);
      assert.match(webhookOutput, /"msg":"FIPS mode: the FIPS provider serves every algorithm, MD5 refused"/);
    } finally {
      webhook.kill('SIGTERM');
      await new Promise((r) => webhook.once('exit', r));
    }
  });

  test('SIGTERM stops it cleanly', async () => {
    child.kill('SIGTERM');
    const code = await new Promise<number | null>((r) => child.once('exit', r));
    assert.equal(code, 0, output.slice(-2000));
  });
});
