import { writeFile } from 'node:fs/promises';
import type { Agent } from 'node:https';
import { join } from 'node:path';
import type { Registry } from 'prom-client';
import {
  createCertificateAuthority,
  type CertificateAuthority,
} from '../../../src/pki/certificate-authority.js';
import { issueCertificate, type IssuedCertificate } from '../../../src/pki/issue-certificate.js';
import type { ClientTlsFiles } from '../../../src/drift/reloading-tls-agent.js';
import { httpsCall, type Reply } from '../../support/https-call.js';

/** A test CA. */
export function newCa(name: string): Promise<CertificateAuthority> {
  return createCertificateAuthority({ commonName: name });
}

/** A serving certificate for the loopback address. */
export function loopbackServingCert(ca: CertificateAuthority): Promise<IssuedCertificate> {
  return issueCertificate(ca, {
    commonName: 'rt-bootstrapper-drift-listener',
    dnsNames: ['localhost'],
    ipAddresses: ['127.0.0.1'],
    usage: 'server',
  });
}

/** A runtime's client certificate: CN = runtime ID, DNS SANs as given. */
export function runtimeClientCert(
  ca: CertificateAuthority,
  runtimeId: string,
  ...dnsNames: string[]
): Promise<IssuedCertificate> {
  return issueCertificate(ca, { commonName: runtimeId, dnsNames, usage: 'client' });
}

/** Writes a client certificate, its key and the server's CA into `dir`, as a Secret mount would. */
export async function writeClientFiles(
  dir: string,
  cert: IssuedCertificate,
  serverCaPem: string,
): Promise<ClientTlsFiles> {
  const files = {
    certFile: join(dir, 'tls.crt'),
    keyFile: join(dir, 'tls.key'),
    caFile: join(dir, 'ca.crt'),
  };
  await writeFile(files.certFile, cert.certPem);
  await writeFile(files.keyFile, cert.keyPem);
  await writeFile(files.caFile, serverCaPem);
  return files;
}

/** A metric's value for the series with these labels; 0 when the series does not exist yet. */
export async function metricValue(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number> {
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name);
  if (metric === undefined) throw new Error(`metric ${name} is not registered`);
  const series = metric.values.find((v) =>
    Object.entries(labels).every(([k, want]) => (v.labels as Record<string, unknown>)[k] === want),
  );
  return series?.value ?? 0;
}

/** How to call the drift listener (or another loopback HTTPS server) with a client certificate. */
export interface CallOptions {
  readonly port: number;
  readonly client?: IssuedCertificate;
  readonly serverCaPem: string;
  readonly path?: string;
  readonly method?: string;
  readonly body?: string | Buffer;
  readonly headers?: Record<string, string | number>;
  readonly agent?: Agent;
}

/** One request (default: POST to the drift event path); rejects when the connection fails. */
export function call(opts: CallOptions): Promise<Reply> {
  return httpsCall({
    port: opts.port,
    caPem: opts.serverCaPem,
    path: opts.path ?? '/v2/rt-bootstrapper/event',
    ...(opts.method ? { method: opts.method } : {}),
    ...(opts.body !== undefined ? { body: opts.body } : {}),
    ...(opts.headers ? { headers: opts.headers } : {}),
    ...(opts.client ? { client: opts.client } : {}),
    ...(opts.agent ? { agent: opts.agent } : {}),
  });
}

/** Polls `check` until it returns true; fails after `timeoutMs` (generous: not a speed assertion). */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  what: string,
  timeoutMs = 10_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
