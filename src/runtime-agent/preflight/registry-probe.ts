/**
 * Whether a registry holds an image, asked as a container runtime would before pulling it: a
 * manifest HEAD of the OCI distribution spec (`HEAD /v2/<repository>/manifests/<tag|digest>`) with
 * the candidate's pull credentials, through the registry's Basic or Bearer (token) challenge.
 * Nothing is downloaded but the token.
 */
import http from 'node:http';
import https from 'node:https';
import tls from 'node:tls';
import { asJsonObject } from '../../api/json-object.js';
import { DOCKER_HUB_REGISTRY, parseImageReference } from '../../image/image-reference.js';
import { parseAuthChallenge, type AuthChallenge } from './auth-challenge.js';
import { readDockerConfig, type RegistryLogin } from './registry-credentials.js';
import { registryRequest, RegistryRequestError, type RegistryAnswer } from './registry-http.js';

/** How an image fared: resolved, not there, credentials refused, or no usable answer. */
export type ProbeResult = 'ok' | 'missing' | 'refused' | 'unreachable';

/** One image's outcome; `detail` is short and never holds a credential. */
export interface ProbeOutcome {
  readonly result: ProbeResult;
  readonly detail?: string;
}

/** The manifest types a runtime accepts: OCI index and manifest, Docker manifest list and manifest. */
export const MANIFEST_ACCEPT = [
  'application/vnd.oci.image.index.v1+json',
  'application/vnd.oci.image.manifest.v1+json',
  'application/vnd.docker.distribution.manifest.list.v2+json',
  'application/vnd.docker.distribution.manifest.v2+json',
].join(', ');

/** The host Docker Hub's registry API answers at (runtimes map `docker.io` to it). */
export const DOCKER_HUB_API_HOST = 'registry-1.docker.io';

/** Options of a {@link RegistryProbe}. */
export interface RegistryProbeOptions {
  /** The candidate's `.dockerconfigjson`; without it, every request is anonymous. */
  readonly dockerConfigJson?: string | undefined;
  /** PEM certificates trusted beside Node's root store (the landscape's trust bundle). */
  readonly ca?: string | undefined;
  /**
   * Where a registry (`host[:port]`, as in image references) is served when not at
   * `https://<registry>`, as containerd's hosts.toml `server` says it: a base URL, e.g.
   * `http://127.0.0.1:5000` for a local plain-HTTP registry, or another address where Pods
   * reach it. Plain HTTP is spoken only to the servers listed here.
   */
  readonly servers?: Readonly<Record<string, string>> | undefined;
  /** Bound of each request (default 10 s). */
  readonly requestTimeoutMs?: number | undefined;
  /** Connections per registry host (default 8). */
  readonly maxSockets?: number | undefined;
  /** Sent as `User-Agent` (default `rt-bootstrapper-preflight`). */
  readonly userAgent?: string | undefined;
}

/** A probe stopped by its caller's signal: the image was not checked. */
export class ProbeAbortedError extends Error {
  override readonly name = 'ProbeAbortedError';
}

/** How a registry wants to be authenticated, once a 401 said so. */
type Scheme = { readonly scheme: 'anonymous' } | AuthChallenge;

interface CachedToken {
  readonly value: string;
  readonly expiresAt: number;
}

// A token's life when the endpoint does not say (the distribution spec's default).
const DEFAULT_TOKEN_SECONDS = 60;
const MAX_DETAIL = 200;
const MISSING_CODES = new Set(['MANIFEST_UNKNOWN', 'NAME_UNKNOWN', 'NAME_INVALID', 'TAG_INVALID']);
const REFUSED_CODES = new Set(['UNAUTHORIZED', 'DENIED']);

/** The API host of a registry: Docker Hub answers at {@link DOCKER_HUB_API_HOST}. */
export function registryApiHost(registry: string): string {
  return registry === DOCKER_HUB_REGISTRY ? DOCKER_HUB_API_HOST : registry;
}

const basic = (login: RegistryLogin): string =>
  `Basic ${Buffer.from(`${login.username}:${login.password}`).toString('base64')}`;

const cut = (text: string): string => (text.length > MAX_DETAIL ? `${text.slice(0, MAX_DETAIL - 1)}…` : text);

/** The error codes of a distribution error body (`{"errors":[{"code":…}]}`). */
function errorCodes(body: string): string[] {
  if (body === '') return [];
  try {
    const errors = asJsonObject(JSON.parse(body))?.errors;
    if (!Array.isArray(errors)) return [];
    return errors.flatMap((e) => {
      const code = asJsonObject(e)?.code;
      return typeof code === 'string' ? [code] : [];
    });
  } catch {
    return [];
  }
}

/**
 * Probes images with one candidate's credentials. Learns each registry's challenge once and
 * caches Bearer tokens per repository until they expire, so that many images of one registry
 * cost one HEAD each. Call {@link close} when done (it ends the kept-alive connections).
 */
export class RegistryProbe {
  private readonly logins: ReadonlyMap<string, RegistryLogin>;
  private readonly servers: ReadonlyMap<string, URL>;
  /** Hosts of the plain-HTTP servers listed: a token realm there may be plain HTTP too. */
  private readonly plainHttpHosts: ReadonlySet<string>;
  private readonly agents: { readonly http: http.Agent; readonly https: https.Agent };
  private readonly timeoutMs: number;
  private readonly headers: Readonly<Record<string, string>>;
  private readonly schemes = new Map<string, Scheme>();
  private readonly tokens = new Map<string, CachedToken>();

  /** @throws DockerConfigError when `dockerConfigJson` is not a pull Secret's JSON. */
  constructor(o: RegistryProbeOptions = {}) {
    this.logins = o.dockerConfigJson === undefined ? new Map() : readDockerConfig(o.dockerConfigJson);
    this.servers = new Map(
      Object.entries(o.servers ?? {}).map(([registry, base]) => [registry, new URL(base)]),
    );
    this.plainHttpHosts = new Set(
      [...this.servers.values()].filter((u) => u.protocol === 'http:').map((u) => u.host),
    );
    const maxSockets = o.maxSockets ?? 8;
    this.agents = {
      http: new http.Agent({ keepAlive: true, maxSockets }),
      https: new https.Agent({
        keepAlive: true,
        maxSockets,
        ca: o.ca !== undefined && o.ca.trim() !== '' ? [...tls.rootCertificates, o.ca] : undefined,
      }),
    };
    this.timeoutMs = o.requestTimeoutMs ?? 10_000;
    this.headers = { 'user-agent': o.userAgent ?? 'rt-bootstrapper-preflight' };
  }

  /**
   * Whether `image` resolves at its registry. Never rejects for what the registry answers or for
   * a failed connection (those are outcomes).
   *
   * @throws ProbeAbortedError when `signal` aborts first.
   */
  async probe(image: string, signal?: AbortSignal): Promise<ProbeOutcome> {
    let ref;
    try {
      ref = parseImageReference(image);
    } catch {
      return { result: 'missing', detail: 'not a valid image reference' };
    }
    const registry = ref.registry;
    const server = this.servers.get(registry);
    const base = server ? `${server.protocol}//${server.host}` : `https://${registryApiHost(registry)}`;
    const url = new URL(`${base}/v2/${ref.repository}/manifests/${ref.digest ?? ref.tag ?? 'latest'}`);
    const scope = `repository:${ref.repository}:pull`;
    const login = this.logins.get(registry);
    try {
      return await this.resolve(registry, url, scope, login, signal);
    } catch (error) {
      if (signal?.aborted === true)
        throw new ProbeAbortedError(`probe of ${image} aborted`, { cause: error });
      if (error instanceof RegistryRequestError) return { result: 'unreachable', detail: cut(error.message) };
      throw error;
    }
  }

  /** Ends the kept-alive connections. */
  close(): void {
    this.agents.http.destroy();
    this.agents.https.destroy();
  }

  private async resolve(
    registry: string,
    url: URL,
    scope: string,
    login: RegistryLogin | undefined,
    signal: AbortSignal | undefined,
  ): Promise<ProbeOutcome> {
    const host = url.host;
    let retriedToken = false;
    // At most: anonymous (or the scheme learned before), then the scheme the 401 names.
    for (let attempt = 0; attempt < 3; attempt++) {
      const known = this.schemes.get(registry) ?? { scheme: 'anonymous' as const };
      const auth = await this.authorization(known, registry, scope, login, signal);
      if ('outcome' in auth) return auth.outcome;
      let answer = await this.send('HEAD', url, auth.header, signal);
      // A registry without HEAD on manifests: the GET answers the same, its body unread.
      if (answer.status === 405) answer = await this.send('GET', url, auth.header, signal);
      if (answer.status !== 401) return classify(answer, host, login !== undefined);

      const challenge = parseAuthChallenge(answer.headers['www-authenticate']);
      if (challenge === undefined) return refused(`${host} answered 401 without a usable challenge`);
      const sameScheme = known.scheme === challenge.scheme;
      if (challenge.scheme === 'basic' && login === undefined)
        return refused(`${host} asks for credentials; the candidate pull Secret has none for ${registry}`);
      if (sameScheme && challenge.scheme === 'basic')
        return refused(`${host} refused the candidate's credentials (401)`);
      if (sameScheme && challenge.scheme === 'bearer') {
        // A token of ours was turned down: once a fresh one (it may have expired early), then the verdict.
        if (retriedToken)
          return refused(
            `${host} refused the token${login === undefined ? ' (no credentials in the candidate pull Secret)' : ''} (401)`,
          );
        retriedToken = true;
        this.tokens.delete(tokenKey(registry, scope));
      }
      this.schemes.set(registry, challenge);
    }
    return refused(`${host} keeps answering 401`);
  }

  private async authorization(
    scheme: Scheme,
    registry: string,
    scope: string,
    login: RegistryLogin | undefined,
    signal: AbortSignal | undefined,
  ): Promise<{ header: string | undefined } | { outcome: ProbeOutcome }> {
    if (scheme.scheme === 'anonymous') return { header: undefined };
    if (scheme.scheme === 'basic') return { header: login ? basic(login) : undefined };
    const key = tokenKey(registry, scope);
    const cached = this.tokens.get(key);
    if (cached !== undefined && cached.expiresAt > Date.now()) return { header: `Bearer ${cached.value}` };
    const token = await this.fetchToken(scheme, scope, login, signal);
    if ('outcome' in token) return token;
    this.tokens.set(key, token);
    return { header: `Bearer ${token.value}` };
  }

  private async fetchToken(
    challenge: Extract<AuthChallenge, { scheme: 'bearer' }>,
    scope: string,
    login: RegistryLogin | undefined,
    signal: AbortSignal | undefined,
  ): Promise<CachedToken | { outcome: ProbeOutcome }> {
    let realm: URL;
    try {
      realm = new URL(challenge.realm);
    } catch {
      return { outcome: { result: 'unreachable', detail: 'the token realm is not a URL' } };
    }
    if (realm.protocol !== 'https:' && !(realm.protocol === 'http:' && this.plainHttpHosts.has(realm.host)))
      return { outcome: { result: 'unreachable', detail: cut(`token realm ${realm.host} is not HTTPS`) } };
    if (challenge.service !== undefined) realm.searchParams.set('service', challenge.service);
    realm.searchParams.set('scope', scope);
    const started = Date.now();
    const answer = await this.send('GET', realm, login ? basic(login) : undefined, signal);
    if (answer.status === 401 || answer.status === 403)
      return {
        outcome: refused(
          login
            ? `token endpoint ${realm.host} refused the candidate's credentials (${answer.status})`
            : `token endpoint ${realm.host} refused an anonymous token (${answer.status}); the candidate pull Secret has no credentials for it`,
        ),
      };
    if (answer.status !== 200)
      return {
        outcome: {
          result: 'unreachable',
          detail: cut(`token endpoint ${realm.host} answered ${answer.status}`),
        },
      };
    let body: Record<string, unknown> | undefined;
    try {
      body = asJsonObject(JSON.parse(answer.body));
    } catch {
      body = undefined;
    }
    const value = typeof body?.token === 'string' ? body.token : body?.access_token;
    if (typeof value !== 'string' || value === '')
      return {
        outcome: { result: 'unreachable', detail: cut(`token endpoint ${realm.host} gave no token`) },
      };
    const seconds =
      typeof body?.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : DEFAULT_TOKEN_SECONDS;
    // Renewed a little early: a token that expires between two HEADs costs a 401 round trip.
    return { value, expiresAt: started + Math.max(1, seconds - 10) * 1000 };
  }

  private send(
    method: 'GET' | 'HEAD',
    url: URL,
    authorization: string | undefined,
    signal: AbortSignal | undefined,
  ): Promise<RegistryAnswer> {
    const isToken = !url.pathname.startsWith('/v2/');
    return registryRequest({
      method,
      url,
      headers: { ...this.headers, accept: isToken ? 'application/json' : MANIFEST_ACCEPT },
      authorization,
      agents: this.agents,
      timeoutMs: this.timeoutMs,
      signal,
    });
  }
}

const tokenKey = (registry: string, scope: string): string => `${registry} ${scope}`;

const refused = (detail: string): ProbeOutcome => ({ result: 'refused', detail: cut(detail) });

/** The outcome of a manifest answer other than 401. */
function classify(answer: RegistryAnswer, host: string, withCredentials: boolean): ProbeOutcome {
  const { status } = answer;
  if (status >= 200 && status < 300) return { result: 'ok' };
  const codes = errorCodes(answer.body);
  const code = codes[0] !== undefined ? ` ${codes[0]}` : '';
  if (codes.some((c) => MISSING_CODES.has(c)) || status === 404)
    return { result: 'missing', detail: cut(`${host} answered ${status}${code || ' (manifest unknown)'}`) };
  if (codes.some((c) => REFUSED_CODES.has(c)) || status === 403)
    return refused(
      `${host} answered ${status}${code}${withCredentials ? " to the candidate's credentials" : ' (no credentials in the candidate pull Secret)'}`,
    );
  return { result: 'unreachable', detail: cut(`${host} answered ${status}${code}`) };
}
