import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
import { Command } from 'commander';
import {
  WEBHOOK_CERT_LEASE,
  WEBHOOK_SERVICE,
  WEBHOOK_TLS_SECRET,
  webhookServiceDnsNames,
} from '../../../src/api/runtime-names.js';
import { registerWebhookCommand } from '../../../src/cli/commands/webhook.js';
import { webhookTlsOptions, type WebhookFlags } from '../../../src/cli/commands/webhook-action.js';
import { createCertificateAuthority } from '../../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../../src/pki/issue-certificate.js';
import { parseCertificates } from '../../../src/pki/pem-certificates.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import { ServedCertificate, trustedByEveryEntry } from '../../../src/serving-cert/served-certificate.js';
import { readServingSecret, servingSecretBody } from '../../../src/serving-cert/serving-secret-codec.js';
import { defaultServingSecret } from '../../../src/serving-cert/serving-cert-settings.js';
import { caBundlesOf } from '../../../src/serving-cert/webhook-configurations.js';

const b64 = (s: string): string => Buffer.from(s).toString('base64');
const ref = { namespace: 'kyma-system', name: WEBHOOK_TLS_SECRET };

async function pki() {
  const ca = await createCertificateAuthority({ commonName: 'ca' });
  const other = await createCertificateAuthority({ commonName: 'other' });
  const leaf = await issueCertificate(ca, { commonName: 'l', dnsNames: ['x'], usage: 'server' });
  const expired = await issueCertificate(ca, {
    commonName: 'old',
    usage: 'server',
    validityMs: 1000,
    now: new Date(Date.now() - 3600_000),
  });
  return { ca, other, leaf, expired };
}

describe('the serving Secret codec', () => {
  test('reads the four keys decoded, and annotations', () => {
    const content = readServingSecret({
      metadata: { annotations: { a: 'b' } },
      data: { 'tls.crt': b64('C'), 'tls.key': b64('K'), 'ca.crt': b64('A') },
    });
    assert.deepEqual(content, {
      tlsCrt: 'C',
      tlsKey: 'K',
      caCrt: 'A',
      caKey: undefined,
      annotations: { a: 'b' },
    });
    assert.equal(readServingSecret(undefined), undefined);
  });

  test('a create is an Opaque Secret with our keys and annotations', () => {
    const body = servingSecretBody(ref, undefined, { caCrt: 'A', caKey: 'K', annotations: { x: '1' } });
    const meta = body.metadata ?? {};
    assert.equal(body.type, 'Opaque');
    assert.deepEqual(meta.annotations, { x: '1' });
    assert.equal(meta.labels?.['app.kubernetes.io/managed-by'], 'rt-bootstrapper');
    assert.deepEqual(body.data, { 'tls.crt': '', 'tls.key': '', 'ca.crt': b64('A'), 'ca.key': b64('K') });
    assert.equal(meta.resourceVersion, undefined);
  });

  test('an update keeps type, other keys, labels and the resourceVersion; a removed ca.key leaves', () => {
    const body = servingSecretBody(
      ref,
      {
        type: 'kubernetes.io/tls',
        metadata: {
          name: ref.name,
          namespace: ref.namespace,
          resourceVersion: '42',
          labels: { team: 'a' },
          annotations: { old: 'gone' },
          managedFields: [{ manager: 'm' }],
        },
        data: { 'tls.crt': b64('C'), 'tls.key': b64('K'), 'ca.key': b64('old'), extra: b64('E') },
      },
      { tlsCrt: 'C2', tlsKey: 'K2', caCrt: 'A', annotations: { kept: 'yes' } },
    );
    const meta = body.metadata ?? {};
    assert.equal(body.type, 'kubernetes.io/tls');
    assert.equal(meta.resourceVersion, '42');
    assert.equal(meta.managedFields, undefined);
    assert.deepEqual(meta.labels, { 'app.kubernetes.io/managed-by': 'rt-bootstrapper', team: 'a' });
    assert.deepEqual(meta.annotations, { kept: 'yes' });
    assert.deepEqual(body.data, {
      'tls.crt': b64('C2'),
      'tls.key': b64('K2'),
      'ca.crt': b64('A'),
      extra: b64('E'),
    });
  });

  test('the caBundle of each webhook entry, decoded', () => {
    assert.deepEqual(caBundlesOf(undefined), []);
    assert.deepEqual(
      caBundlesOf({
        webhooks: [
          {
            name: 'a',
            clientConfig: { caBundle: b64('PEM') },
            sideEffects: 'None',
            admissionReviewVersions: ['v1'],
          },
          { name: 'b', clientConfig: {}, sideEffects: 'None', admissionReviewVersions: ['v1'] },
        ],
      }),
      ['PEM', ''],
    );
  });
});

describe('the served certificate', () => {
  test('a placeholder until the Secret has a usable pair; then the pair, swapped once', async () => {
    const { leaf, ca } = await pki();
    const applied: SecureContextOptions[] = [];
    const results: string[] = [];
    const served = new ServedCertificate(silentLogger(), (r) => results.push(r));
    const placeholder = await served.initial(undefined);
    createSecureContext(placeholder);
    assert.equal(served.leaf(), undefined, 'the placeholder does not count as served');
    served.attach((tls) => applied.push(tls));
    const secret = { tlsCrt: leaf.certPem, tlsKey: leaf.keyPem, caCrt: ca.certPem };
    served.offer(secret);
    served.offer(secret);
    assert.equal(applied.length, 1);
    assert.equal(applied[0]?.cert, leaf.certPem);
    assert.equal(served.leaf()?.pem, parseCertificates(leaf.certPem).certificates[0]?.pem);
    assert.deepEqual(results, ['success']);
  });

  test('a pair that does not fit is not served; the old one stays', async () => {
    const { leaf, ca } = await pki();
    const applied: SecureContextOptions[] = [];
    const results: string[] = [];
    const served = new ServedCertificate(silentLogger(), (r) => results.push(r));
    const initial = await served.initial({ tlsCrt: leaf.certPem, tlsKey: leaf.keyPem });
    assert.equal(initial.cert, leaf.certPem);
    served.attach((tls) => applied.push(tls));
    served.offer({ tlsCrt: leaf.certPem, tlsKey: ca.keyPem });
    served.offer({ tlsCrt: leaf.certPem, tlsKey: ca.keyPem });
    served.offer({ tlsCrt: 'garbage', tlsKey: 'garbage' });
    served.offer(undefined);
    assert.equal(applied.length, 0);
    assert.deepEqual(results, ['failure', 'failure'], 'one report per bad content');
    assert.ok(served.leaf());
  });

  test('trusted by every entry: each caBundle holds a CA that signed it, and it is valid now', async () => {
    const { leaf, ca, other, expired } = await pki();
    const parsed = parseCertificates(leaf.certPem).certificates[0]!;
    const now = Date.now();
    assert.equal(trustedByEveryEntry(parsed, [], now), true, 'nobody registers us');
    assert.equal(trustedByEveryEntry(parsed, [ca.certPem], now), true);
    assert.equal(trustedByEveryEntry(parsed, [other.certPem + ca.certPem, ca.certPem], now), true);
    assert.equal(trustedByEveryEntry(parsed, [ca.certPem, other.certPem], now), false);
    assert.equal(trustedByEveryEntry(parsed, [''], now), false);
    const old = parseCertificates(expired.certPem).certificates[0]!;
    assert.equal(trustedByEveryEntry(old, [ca.certPem], now), false);
  });
});

describe('rtb webhook TLS flags', () => {
  const flags = (over: Partial<WebhookFlags>): WebhookFlags => ({
    port: '9443',
    host: '0.0.0.0',
    tlsMinVersion: '1.3',
    configMap: 'kyma-system/rt-bootstrapper-config',
    configKey: 'k',
    logLevel: 'info',
    driftCert: '',
    driftKey: '',
    driftCa: '',
    shutdownDelay: '5s',
    webhookService: WEBHOOK_SERVICE,
    tlsExtraSan: [],
    certLease: WEBHOOK_CERT_LEASE,
    servingCertIssuer: 'own',
    trustRestart: true,
    restartConcurrency: '1',
    restartDelay: '30s',
    restartDeadline: '10m',
    restartLease: 'rt-bootstrapper-trust-restarter',
    ...over,
  });

  test('files are served as given; one without the other is refused', () => {
    assert.deepEqual(webhookTlsOptions(flags({ tlsCert: 'c', tlsKey: 'k' })), {
      tls: { certFile: 'c', keyFile: 'k' },
    });
    assert.throws(() => webhookTlsOptions(flags({ tlsCert: 'c' })), /--tls-cert and --tls-key go together/);
    assert.throws(() => webhookTlsOptions(flags({ tlsKey: 'k' })), /--tls-cert and --tls-key go together/);
  });

  test('without files the webhook keeps its own certificate', () => {
    assert.deepEqual(webhookTlsOptions(flags({ tlsExtraSan: ['127.0.0.1', 'a.example'] })), {
      servingCert: {
        secret: undefined,
        issuer: undefined,
        service: WEBHOOK_SERVICE,
        extraSans: ['127.0.0.1', 'a.example'],
        leaseName: WEBHOOK_CERT_LEASE,
      },
    });
    assert.deepEqual(webhookTlsOptions(flags({ tlsSecret: 'ns/s' })).servingCert?.secret, {
      namespace: 'ns',
      name: 's',
    });
    assert.throws(
      () => webhookTlsOptions(flags({ tlsSecret: 'just-a-name' })),
      /--tls-secret must be namespace\/name/,
    );
  });

  test('--serving-cert-issuer: external leaves the writing to another party; anything else but own is refused', () => {
    assert.equal(webhookTlsOptions(flags({})).servingCert?.issuer, undefined);
    assert.equal(webhookTlsOptions(flags({ servingCertIssuer: 'external' })).servingCert?.issuer, 'external');
    assert.throws(
      () => webhookTlsOptions(flags({ servingCertIssuer: 'kcp' })),
      /--serving-cert-issuer must be own or external, got kcp/,
    );
  });

  test('no default certificate files; the own certificate’s defaults are the agreed names', () => {
    const program = new Command();
    registerWebhookCommand(program);
    const webhook = program.commands.find((c) => c.name() === 'webhook')!;
    const defaultOf = (flag: string): unknown => webhook.options.find((o) => o.long === flag)?.defaultValue;
    assert.equal(defaultOf('--tls-cert'), undefined);
    assert.equal(defaultOf('--tls-key'), undefined);
    assert.equal(defaultOf('--webhook-service'), WEBHOOK_SERVICE);
    assert.equal(defaultOf('--cert-lease'), WEBHOOK_CERT_LEASE);
    assert.equal(defaultOf('--serving-cert-issuer'), 'own');
    assert.deepEqual(webhookServiceDnsNames('kyma-system', 'other'), [
      'other',
      'other.kyma-system',
      'other.kyma-system.svc',
      'other.kyma-system.svc.cluster.local',
    ]);
  });

  test('the Secret’s namespace defaults to the Pod’s', () => {
    const saved = process.env.POD_NAMESPACE;
    try {
      process.env.POD_NAMESPACE = 'elsewhere';
      assert.deepEqual(defaultServingSecret(), { namespace: 'elsewhere', name: WEBHOOK_TLS_SECRET });
      delete process.env.POD_NAMESPACE;
      assert.deepEqual(defaultServingSecret(), { namespace: 'kyma-system', name: WEBHOOK_TLS_SECRET });
    } finally {
      if (saved === undefined) delete process.env.POD_NAMESPACE;
      else process.env.POD_NAMESPACE = saved;
    }
  });
});
