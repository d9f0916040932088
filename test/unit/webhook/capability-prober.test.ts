import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { ClusterAccess } from '../../../src/kube/cluster-access.js';
import { TrustBundleApis } from '../../../src/kube/trust-bundle-discovery.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import { eventually } from '../../../src/envtest/eventually.js';
import {
  probeCapability,
  startCapabilityProber,
} from '../../../src/webhook/trust-capability/capability-prober.js';
import { PROBE_VOLUME } from '../../../src/webhook/trust-capability/probe-pod.js';

/** What the fake API server answers; tests change it. */
const world = {
  v1: ['certificatesigningrequests'] as string[] | undefined,
  v1beta1: ['clustertrustbundles'] as string[] | undefined,
  /** `keep`: the Pod back as sent; `drop`: its source emptied; a number: that status. */
  dryRun: 'keep' as 'keep' | 'drop' | number,
  dryRunQueries: [] as string[],
};

let server: Server;
let access: ClusterAccess;

function body(req: IncomingMessage): Promise<string> {
  return new Promise((resolve) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      resolve(Buffer.concat(chunks).toString('utf8'));
    });
  });
}

before(async () => {
  server = createServer((req, res) => {
    void (async () => {
      const url = new URL(req.url ?? '/', 'http://x');
      const json = (code: number, value: unknown): void => {
        res.writeHead(code, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(value));
      };
      const list = (names: string[] | undefined): void => {
        if (names === undefined) json(404, { kind: 'Status', code: 404, reason: 'NotFound', details: {} });
        else json(200, { kind: 'APIResourceList', resources: names.map((name) => ({ name })) });
      };
      if (url.pathname === '/apis/certificates.k8s.io/v1') {
        list(world.v1);
        return;
      }
      if (url.pathname === '/apis/certificates.k8s.io/v1beta1') {
        list(world.v1beta1);
        return;
      }
      if (req.method === 'POST' && url.pathname === '/api/v1/namespaces/kyma-system/pods') {
        world.dryRunQueries.push(url.search);
        const pod = JSON.parse(await body(req)) as {
          spec: { volumes: { name: string; projected: { sources: unknown[] } }[] };
        };
        if (typeof world.dryRun === 'number') {
          json(world.dryRun, { kind: 'Status', code: world.dryRun, message: 'refused by policy' });
          return;
        }
        if (world.dryRun === 'drop')
          for (const v of pod.spec.volumes) if (v.name === PROBE_VOLUME) v.projected.sources = [{}];
        json(201, pod);
        return;
      }
      json(404, { kind: 'Status', code: 404 });
    })();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  access = {
    getCurrentCluster: () => ({ server: `http://127.0.0.1:${port}` }),
    applyToHTTPSOptions: () => Promise.resolve(),
  };
});
after(() => {
  server.close();
});

const settings = { namespace: 'kyma-system', timeoutMs: 2_000 };

describe('probing the trust-bundle capability', () => {
  test('each finding, from discovery and the dry-run answer; the Pod is only ever dry-run', async () => {
    Object.assign(world, {
      v1: ['certificatesigningrequests'],
      v1beta1: ['clustertrustbundles'],
      dryRun: 'keep',
    });
    assert.deepEqual(await probeCapability(access, settings, new TrustBundleApis()), {
      api: 'certificates.k8s.io/v1beta1',
      projection: 'kept',
      detail: undefined,
      servedVersions: undefined,
    });
    world.dryRun = 'drop';
    world.v1 = ['certificatesigningrequests', 'clustertrustbundles'];
    // v1beta1 beside v1: kubelets before 1.37 can still read the bundle.
    assert.deepEqual(await probeCapability(access, settings, new TrustBundleApis()), {
      api: 'certificates.k8s.io/v1',
      projection: 'dropped',
      detail: undefined,
      servedVersions: ['v1', 'v1beta1'],
    });
    world.v1beta1 = undefined;
    assert.deepEqual(await probeCapability(access, settings, new TrustBundleApis()), {
      api: 'certificates.k8s.io/v1',
      projection: 'dropped',
      detail: undefined,
      servedVersions: undefined,
    });
    world.v1 = ['certificatesigningrequests'];
    world.v1beta1 = undefined;
    const none = await probeCapability(access, settings, new TrustBundleApis());
    assert.equal(none.api, 'none');
    assert.match(none.detail ?? '', /v1beta1 is not served/);
    world.dryRun = 403;
    const refused = await probeCapability(access, settings, new TrustBundleApis());
    assert.equal(refused.projection, 'unknown');
    assert.match(refused.detail ?? '', /dry-run probe Pod failed: refused by policy/);
    assert.ok(
      world.dryRunQueries.every((q) => q === '?dryRun=All'),
      world.dryRunQueries.join(' '),
    );
  });

  test('the prober tells each change once, retries soon while unknown, and probes again when asked', async () => {
    Object.assign(world, {
      v1: ['certificatesigningrequests'],
      v1beta1: ['clustertrustbundles'],
      dryRun: 403,
    });
    const seen: string[] = [];
    const prober = startCapabilityProber({
      access,
      settings: { ...settings, periodMs: 60_000, retryMs: 50 },
      logger: silentLogger(),
      apis: new TrustBundleApis(),
    });
    try {
      prober.onChange((c) => seen.push(c.projection));
      await eventually(() => (prober.current()?.projection === 'unknown' ? true : undefined), 5_000);
      // The policy goes away: the next retry (soon, not after the period) finds the answer.
      world.dryRun = 'drop';
      await eventually(() => (prober.current()?.projection === 'dropped' ? true : undefined), 5_000);
      // Settled: the next probe only after the period, unless asked.
      world.dryRun = 'keep';
      const before = world.dryRunQueries.length;
      await new Promise((r) => setTimeout(r, 300));
      assert.equal(world.dryRunQueries.length, before, 'no probe before the period');
      prober.refresh();
      await eventually(() => (prober.current()?.projection === 'kept' ? true : undefined), 5_000);
      assert.deepEqual(seen.slice(-2), ['dropped', 'kept']);
    } finally {
      prober.stop();
    }
  });
});
