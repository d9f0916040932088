import {
  AdmissionregistrationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  type V1MutatingWebhookConfiguration,
} from '@kubernetes/client-node';
import assert from 'node:assert/strict';
import { request } from 'node:https';
import { Writable } from 'node:stream';
import { after, before, describe, test } from 'node:test';
import { connect } from 'node:tls';
import { Registry } from 'prom-client';
import {
  MUTATING_WEBHOOK_CONFIGURATION,
  MUTATING_WEBHOOK_NAME,
  WEBHOOK_CERT_LEASE,
  WEBHOOK_TLS_SECRET,
} from '../../src/api/runtime-names.js';
import { freePort } from '../../src/envtest/free-port.js';
import { issuedBy, parseCertificates } from '../../src/pki/pem-certificates.js';
import type { ServingPolicy } from '../../src/serving-cert/serving-policy.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { startWebhookApp, type WebhookApp } from '../../src/webhook/webhook-app.js';
import { useControlPlane } from '../support/control-plane.js';
import { eventually } from '../../src/envtest/eventually.js';
import { putSeedConfig } from '../support/webhook-runtime.js';

const plane = useControlPlane({ clusters: ['runtime'] });
const NS = 'kyma-system';
const LOAD_NS = 'serving-cert-load';
const SERVER_NAME = `rt-bootstrapper-webhook-service.${NS}.svc`;
const FIPS = 'rt-cfg.kyma-project.io/set-fips-mode';
// Short lives, so a CA rotation happens within the test: the CA is replaced from 15 s of age on,
// certificates live 9 s (renewed from 6 s on), the API server gets 2 s to load a new caBundle,
// and a retired CA stays trusted 4 s.
const POLICY: ServingPolicy = {
  servingLifetimeMs: 9_000,
  servingRenewFraction: 1 / 3,
  caLifetimeMs: 30_000,
  caRotateFraction: 1 / 2,
  settleMs: 2_000,
  overlapMs: 4_000,
};

interface Replica {
  readonly identity: string;
  readonly port: number;
  app: WebhookApp | undefined;
}

let core: CoreV1Api;
let admission: AdmissionregistrationV1Api;
let leases: CoordinationV1Api;
const replicas: Replica[] = [];
const logLines: string[] = [];

const decode = (b64: string | undefined): string => Buffer.from(b64 ?? '', 'base64').toString('utf8');

async function caBundle(): Promise<string> {
  const mwc = await admission.readMutatingWebhookConfiguration({ name: MUTATING_WEBHOOK_CONFIGURATION });
  const b = mwc.webhooks?.[0]?.clientConfig.caBundle;
  return typeof b === 'string' ? decode(b) : '';
}

async function servedSecret(): Promise<{ tlsCrt: string; caCrt: string }> {
  const s = await core.readNamespacedSecret({ namespace: NS, name: WEBHOOK_TLS_SECRET });
  return { tlsCrt: decode(s.data?.['tls.crt']), caCrt: decode(s.data?.['ca.crt']) };
}

const fingerprints = (pem: string): string[] => parseCertificates(pem).certificates.map((c) => c.fingerprint);

/** The CA (fingerprint) of `bundle` that signed `certPem`. */
function issuerIn(certPem: string, bundle: string): string | undefined {
  const leaf = parseCertificates(certPem).certificates[0];
  return leaf && parseCertificates(bundle).certificates.find((c) => issuedBy(leaf, c))?.fingerprint;
}

/** A TLS handshake as the API server makes it: the Service's name, nothing but `ca` trusted. */
function handshake(port: number, ca: string): Promise<string | undefined> {
  return new Promise((resolve) => {
    const socket = connect({
      host: '127.0.0.1',
      port,
      servername: SERVER_NAME,
      ca,
      rejectUnauthorized: true,
    });
    socket.once('secureConnect', () => {
      const fp = socket.getPeerX509Certificate()?.fingerprint256.replaceAll(':', '').toLowerCase();
      socket.end();
      resolve(fp);
    });
    socket.once('error', () => {
      resolve(undefined);
    });
  });
}

function readyz(port: number, ca: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: '/readyz', servername: SERVER_NAME, ca }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

async function startReplica(r: Replica): Promise<void> {
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) logLines.push(`${r.identity} ${line}`);
      cb();
    },
  });
  r.app = await startWebhookApp({
    kubeConfig: plane().cluster('runtime').kubeConfig(),
    servingCert: {
      extraSans: ['127.0.0.1'],
      identity: r.identity,
      leaseTiming: { leaseDurationMs: 3_000, renewDeadlineMs: 2_000, retryPeriodMs: 500 },
      policy: POLICY,
    },
    host: '127.0.0.1',
    port: r.port,
    registry: new Registry(),
    logger: createLogger({ level: 'info', destination: sink }),
  });
}

const podBody = {
  metadata: { generateName: 'load-', annotations: { [FIPS]: 'true' } },
  spec: { containers: [{ name: 'app', image: 'nginx:1' }] },
};

async function createPod(): Promise<void> {
  const pod = await core.createNamespacedPod({ namespace: LOAD_NS, body: podBody });
  if (pod.metadata?.annotations?.['rt-bootstrapper.kyma-project.io/defaulted'] !== 'true')
    throw new Error('the Pod was not mutated');
}

describe('the webhook keeps its own serving certificate', () => {
  before(async () => {
    const cluster = plane().cluster('runtime');
    core = cluster.kubeConfig().makeApiClient(CoreV1Api);
    admission = cluster.kubeConfig().makeApiClient(AdmissionregistrationV1Api);
    leases = cluster.kubeConfig().makeApiClient(CoordinationV1Api);
    // NS is kyma-system, where the seed config goes.
    await putSeedConfig(cluster);
    await core.createNamespace({
      body: { metadata: { name: LOAD_NS, labels: { 'serving-cert-load': 'true' } } },
    });
    for (const identity of ['replica-a', 'replica-b'])
      replicas.push({ identity, port: await freePort(), app: undefined });
    // Registered first, as KIM installs it: no caBundle yet, calls fail until the webhook has one.
    const mwc: V1MutatingWebhookConfiguration = {
      metadata: { name: MUTATING_WEBHOOK_CONFIGURATION },
      webhooks: [
        {
          name: MUTATING_WEBHOOK_NAME,
          clientConfig: { url: `https://127.0.0.1:${replicas[0]!.port}/mutate` },
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
          namespaceSelector: { matchLabels: { 'serving-cert-load': 'true' } },
          failurePolicy: 'Fail',
          sideEffects: 'NoneOnDryRun',
          admissionReviewVersions: ['v1'],
          timeoutSeconds: 10,
        },
      ],
    };
    await admission.createMutatingWebhookConfiguration({ body: mwc });
    for (const r of replicas) await startReplica(r);
  });

  after(async () => {
    for (const r of replicas) await r.app?.stop();
  });

  test('one writer; the Secret and the caBundle appear; both replicas serve a trusted certificate', async () => {
    const writer = await eventually(
      () => {
        const writers = replicas.filter((r) => r.app?.isCertWriter());
        return writers.length === 1 ? writers[0] : undefined;
      },
      15_000,
      'one writer',
    );
    const lease = await leases.readNamespacedLease({ namespace: NS, name: WEBHOOK_CERT_LEASE });
    assert.equal(lease.spec?.holderIdentity, writer.identity);
    assert.equal(replicas.filter((r) => r.app?.isCertWriter()).length, 1, 'exactly one writer');

    await eventually(async () => ((await caBundle()) !== '' ? true : undefined), 15_000, 'the caBundle');
    for (const r of replicas) {
      // Through the caBundle only, with the Service's name (a rotation may be under way: read it again).
      await eventually(async () => handshake(r.port, await caBundle()), 15_000, `TLS to ${r.identity}`);
      await eventually(
        async () => ((await readyz(r.port, await caBundle())) === 200 ? true : undefined),
        15_000,
        `${r.identity} ready`,
      );
    }
    const { caCrt } = await servedSecret();
    const bundle = await caBundle();
    assert.deepEqual(new Set(fingerprints(bundle)), new Set(fingerprints(caCrt)), 'caBundle = ca.crt');
    await eventually(
      async () => {
        await createPod();
        return true;
      },
      20_000,
      'Pod creation through the API server',
    );
  });

  test('a CA rotation while Pods are being created: no call fails', async () => {
    const start = await servedSecret();
    const oldCa = issuerIn(start.tlsCrt, start.caCrt);
    assert.ok(oldCa, 'the served certificate’s CA is in ca.crt');
    let created = 0;
    const failures: string[] = [];
    let done = false;
    const load = async (): Promise<void> => {
      while (!done) {
        try {
          await createPod();
          created++;
        } catch (err) {
          failures.push(err instanceof Error ? err.message : String(err));
        }
      }
    };
    const workers = [load(), load()];
    let newCa: string | undefined;
    try {
      // Until the served certificate comes from another CA and the old one has left the caBundle.
      newCa = await eventually(
        async () => {
          const { tlsCrt, caCrt } = await servedSecret();
          const bundle = await caBundle();
          const issuer = issuerIn(tlsCrt, caCrt);
          return issuer !== undefined && issuer !== oldCa && !fingerprints(bundle).includes(oldCa)
            ? issuer
            : undefined;
        },
        45_000,
        'a CA rotation to complete',
      );
    } finally {
      done = true;
      await Promise.all(workers);
    }
    assert.deepEqual(failures, [], `failed creates:\n${logLines.slice(-30).join('\n')}`);
    assert.ok(created >= 10, `${created} Pods created during the rotation`);
    assert.ok(fingerprints(await caBundle()).includes(newCa));
  });

  test('the writer stops: the other replica takes the Lease and keeps renewing', async () => {
    const writer = replicas.find((r) => r.app?.isCertWriter());
    assert.ok(writer);
    const other = replicas.find((r) => r !== writer)!;
    await writer.app?.stop();
    writer.app = undefined;
    await eventually(
      () => (other.app?.isCertWriter() ? true : undefined),
      10_000,
      'the other replica to write',
    );
    const lease = await leases.readNamespacedLease({ namespace: NS, name: WEBHOOK_CERT_LEASE });
    assert.equal(lease.spec?.holderIdentity, other.identity);
    const before = (await servedSecret()).tlsCrt;
    await eventually(
      async () => {
        const { tlsCrt } = await servedSecret();
        return tlsCrt !== before ? true : undefined;
      },
      20_000,
      'a renewal by the new writer',
    );
    await eventually(
      async () => handshake(other.port, await caBundle()),
      10_000,
      'TLS to the remaining replica',
    );
    await eventually(
      async () => ((await readyz(other.port, await caBundle())) === 200 ? true : undefined),
      10_000,
      'the remaining replica ready',
    );
  });
});
