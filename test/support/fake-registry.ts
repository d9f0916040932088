/**
 * A test double of a registry's HTTP answers on loopback (plain HTTP or HTTPS with a CA of its
 * own): manifest HEAD/GET of the distribution spec, behind no auth, Basic, or a Bearer token
 * endpoint as Docker Hub, ghcr.io and Harbor run it. It records every request so tests can count
 * round trips. Not a registry: it stores no content, only which `repository:reference` exist.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { createCertificateAuthority } from '../../src/pki/certificate-authority.js';
import { issueCertificate } from '../../src/pki/issue-certificate.js';

/** How the double wants clients to authenticate. */
export type FakeRegistryAuth =
  | { readonly kind: 'none' }
  | { readonly kind: 'basic'; readonly username: string; readonly password: string }
  | {
      readonly kind: 'bearer';
      /** Absent: anonymous tokens (a public registry); present: only these credentials get one. */
      readonly login?: { readonly username: string; readonly password: string };
      /** Token lifetime announced (`expires_in`). */
      readonly expiresIn?: number;
    };

/** Options of {@link startFakeRegistry}. */
export interface FakeRegistryOptions {
  readonly auth?: FakeRegistryAuth;
  /** `repository:reference` pairs that exist, e.g. `library/nginx:1.27` or `a/b@sha256:…`. */
  readonly manifests?: readonly string[];
  /** HTTPS with a fresh CA (`caPem`); default plain HTTP. */
  readonly tls?: boolean;
  /** Fixed answers by repository, before auth: a status, or `hang` (never answers). */
  readonly answers?: Readonly<Record<string, number | 'hang'>>;
  /** Answer HEAD of manifests with 405 (a registry that only has GET). */
  readonly noHead?: boolean;
}

/** One request as the double saw it. */
export interface SeenRequest {
  readonly method: string;
  readonly path: string;
  /** `none`, `basic`, `bearer`: what the Authorization header carried. */
  readonly auth: string;
  readonly accept: string;
}

/** A running double. */
export interface FakeRegistry {
  /** `127.0.0.1:<port>`, the registry part of image references. */
  readonly host: string;
  readonly caPem: string | undefined;
  readonly requests: SeenRequest[];
  /** Tokens handed out. */
  tokensIssued(): number;
  close(): Promise<void>;
}

const ERROR = (code: string, message: string): string =>
  JSON.stringify({ errors: [{ code, message, detail: null }] });

/** Starts the double on a free loopback port. */
export async function startFakeRegistry(o: FakeRegistryOptions = {}): Promise<FakeRegistry> {
  const auth = o.auth ?? { kind: 'none' };
  const manifests = new Set(o.manifests ?? []);
  const requests: SeenRequest[] = [];
  const tokens = new Map<string, string>();
  let issued = 0;
  let origin = '';
  const hanging = new Set<http.ServerResponse>();

  const handler = (req: http.IncomingMessage, res: http.ServerResponse): void => {
    const url = new URL(req.url ?? '/', 'http://x');
    const header = req.headers.authorization ?? '';
    requests.push({
      method: req.method ?? '',
      path: url.pathname + url.search,
      auth: header === '' ? 'none' : (header.split(' ')[0] ?? '').toLowerCase(),
      accept: req.headers.accept ?? '',
    });
    const basicOk = (login: { username: string; password: string }): boolean =>
      header === `Basic ${Buffer.from(`${login.username}:${login.password}`).toString('base64')}`;

    if (url.pathname === '/token') {
      if (auth.kind !== 'bearer') {
        res.writeHead(404).end();
        return;
      }
      if (auth.login && !basicOk(auth.login)) {
        res
          .writeHead(401, { 'content-type': 'application/json' })
          .end(ERROR('UNAUTHORIZED', 'bad credentials'));
        return;
      }
      issued++;
      const token = `t${issued}`;
      tokens.set(token, url.searchParams.get('scope') ?? '');
      res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(
          JSON.stringify({ token, ...(auth.expiresIn !== undefined ? { expires_in: auth.expiresIn } : {}) }),
        );
      return;
    }

    const m = /^\/v2\/(.+)\/manifests\/([^/]+)$/.exec(url.pathname);
    if (!m) {
      res.writeHead(url.pathname === '/v2/' ? 200 : 404).end();
      return;
    }
    const repository = m[1] ?? '';
    const reference = m[2] ?? '';
    const fixed = o.answers?.[repository];
    if (fixed === 'hang') {
      hanging.add(res);
      return;
    }
    if (fixed !== undefined) {
      res
        .writeHead(fixed, { 'content-type': 'application/json' })
        .end(req.method === 'HEAD' ? undefined : ERROR('DENIED', 'x'));
      return;
    }
    const scope = `repository:${repository}:pull`;
    const challenge = (): void => {
      const value =
        auth.kind === 'basic'
          ? 'Basic realm="fake"'
          : `Bearer realm="${origin}/token",service="fake-registry",scope="${scope}"`;
      res
        .writeHead(401, { 'www-authenticate': value, 'content-type': 'application/json' })
        .end(req.method === 'HEAD' ? undefined : ERROR('UNAUTHORIZED', 'authentication required'));
    };
    if (auth.kind === 'basic' && !basicOk(auth)) {
      challenge();
      return;
    }
    if (auth.kind === 'bearer') {
      const token = header.startsWith('Bearer ') ? header.slice(7) : undefined;
      if (token === undefined || tokens.get(token) !== scope) {
        challenge();
        return;
      }
    }
    if (o.noHead === true && req.method === 'HEAD') {
      res.writeHead(405).end();
      return;
    }
    const exists = manifests.has(
      reference.includes(':') ? `${repository}@${reference}` : `${repository}:${reference}`,
    );
    if (!exists) {
      res
        .writeHead(404, { 'content-type': 'application/json' })
        .end(req.method === 'HEAD' ? undefined : ERROR('MANIFEST_UNKNOWN', 'manifest unknown'));
      return;
    }
    res
      .writeHead(200, {
        'content-type': 'application/vnd.oci.image.manifest.v1+json',
        'docker-content-digest': 'sha256:' + '0'.repeat(64),
        'content-length': '2',
      })
      .end(req.method === 'HEAD' ? undefined : '{}');
  };

  let caPem: string | undefined;
  let server: http.Server;
  if (o.tls === true) {
    const ca = await createCertificateAuthority({ commonName: 'fake-registry-ca' });
    const leaf = await issueCertificate(ca, {
      commonName: '127.0.0.1',
      ipAddresses: ['127.0.0.1'],
      dnsNames: ['localhost'],
      usage: 'server',
    });
    caPem = ca.certPem;
    server = https.createServer({ cert: leaf.certPem, key: leaf.keyPem }, handler);
  } else {
    server = http.createServer(handler);
  }
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const host = `127.0.0.1:${port}`;
  origin = `${o.tls === true ? 'https' : 'http'}://${host}`;
  return {
    host,
    caPem,
    requests,
    tokensIssued: () => issued,
    close: async () => {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    },
  };
}
