/**
 * How the raw API helpers ({@link KubeListWatch}, `kubeRequest`) reach a cluster, and a small
 * kubeconfig loader for processes that need nothing else from `@kubernetes/client-node`.
 *
 * client-node's `KubeConfig` satisfies {@link ClusterAccess}. Importing client-node costs a
 * process tens of MB of memory (every generated API and model is loaded, also by a deep import
 * of its config module; docs/figures.md, webhook throughput), so the webhook loads its
 * kubeconfig with {@link loadClusterAccess}: the in-cluster service account, or a kubeconfig
 * file whose user has a client certificate or a bearer token, read the way client-node reads
 * them. Anything else (exec plugins, auth
 * providers, basic auth, proxies, several files in `$KUBECONFIG`, no kubeconfig at all, a file
 * this loader does not understand) is handed to client-node, imported only then, so every
 * kubeconfig that worked before works the same way.
 *
 * @see KubeListWatch in ./list-watch.ts
 */
import { accessSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import { isIPv6 } from 'node:net';
import { delimiter, dirname, isAbsolute, join } from 'node:path';
import { isJsonObject, type JsonObject } from '../api/json-object.js';
import type { RequestLimits } from './request-limits.js';

/** The server of a kubeconfig's current context and the credentials to call it. */
export interface ClusterAccess {
  /** The current context's cluster (its `server` has no trailing slash), or null without one. */
  getCurrentCluster(): { readonly server: string } | null;
  /**
   * Adds what a request to that server needs to `opts`: TLS trust and client certificate,
   * `Authorization` (and impersonation) headers and an agent. Called per request, so rotated
   * tokens and certificates are picked up.
   */
  applyToHTTPSOptions(opts: https.RequestOptions): Promise<void>;
  /** Bounds of every call through this access (a cluster not trusted: ./request-limits.ts); none when absent. */
  readonly requestLimits?: RequestLimits;
}

const SERVICE_ACCOUNT_ROOT = '/var/run/secrets/kubernetes.io/serviceaccount';
const SERVICE_ACCOUNT_CA = `${SERVICE_ACCOUNT_ROOT}/ca.crt`;
const SERVICE_ACCOUNT_TOKEN = `${SERVICE_ACCOUNT_ROOT}/token`;
/** client-node (like client-go) re-reads a token file at most once a minute. */
const TOKEN_FILE_MAX_AGE_MS = 60_000;

/** A kubeconfig cluster as client-node reads it. */
interface LiteCluster {
  readonly server: string;
  readonly caData?: string | undefined;
  readonly caFile?: string | undefined;
  readonly skipTLSVerify: boolean;
  readonly tlsServerName?: string | undefined;
}

/** A kubeconfig user this loader serves: client certificate and/or bearer token. */
interface LiteUser {
  readonly certData?: string | undefined;
  readonly certFile?: string | undefined;
  readonly keyData?: string | undefined;
  readonly keyFile?: string | undefined;
  /** A static token (`token`, or `token-file` read once at load, as client-node does). */
  readonly token?: string | undefined;
  /** The service account's token file, re-read when a minute old (in-cluster only). */
  readonly tokenFile?: string | undefined;
  /** `as`: sent as `Impersonate-User`. */
  readonly impersonateUser?: string | undefined;
}

/**
 * {@link ClusterAccess} for one cluster and user, with client-node's semantics: TLS files are
 * read on every call, a token file at most once a minute, and each call gets its own agent.
 */
export class KubeconfigLite implements ClusterAccess {
  #token: string | undefined;
  #tokenReadAt = 0;
  // Inline data decoded once: every request then hands out the same buffers, which is how a
  // keep-alive agent recognises the identity (./keep-alive-agents.ts) without comparing bytes.
  // (The base64 text is not kept: thousands of runtime clients would hold it twice.)
  readonly #caData: Buffer | undefined;
  readonly #certData: Buffer | undefined;
  readonly #keyData: Buffer | undefined;
  private readonly cluster: LiteCluster;
  private readonly user: LiteUser;

  constructor(cluster: LiteCluster, user: LiteUser) {
    const { caData, ...clusterRest } = cluster;
    const { certData, keyData, ...userRest } = user;
    this.cluster = clusterRest;
    this.user = userRest;
    this.#caData = decoded(caData);
    this.#certData = decoded(certData);
    this.#keyData = decoded(keyData);
  }

  getCurrentCluster(): { readonly server: string } {
    return this.cluster;
  }

  async applyToHTTPSOptions(opts: https.RequestOptions): Promise<void> {
    const { cluster, user } = this;
    if (cluster.skipTLSVerify) opts.rejectUnauthorized = false;
    if (cluster.tlsServerName) opts.servername = cluster.tlsServerName;
    const ca = await fileOrData(cluster.caFile, this.#caData);
    if (ca) opts.ca = ca;
    const cert = await fileOrData(user.certFile, this.#certData);
    if (cert) opts.cert = cert;
    const key = await fileOrData(user.keyFile, this.#keyData);
    if (key) opts.key = key;
    const headers = (opts.headers ??= {}) as http.OutgoingHttpHeaders;
    if (user.impersonateUser) headers['Impersonate-User'] = user.impersonateUser;
    if (user.tokenFile !== undefined) {
      if (this.#token === undefined || Date.now() - this.#tokenReadAt > TOKEN_FILE_MAX_AGE_MS) {
        this.#token = await readFile(user.tokenFile, 'utf8');
        this.#tokenReadAt = Date.now();
      }
      if (this.#token) headers.Authorization = `Bearer ${this.#token}`;
    }
    if (user.token) headers.Authorization = `Bearer ${user.token}`;
    opts.agent = createAgent(cluster, opts);
  }
}

// The same agent options client-node copies from the request options.
function createAgent(cluster: LiteCluster, opts: https.RequestOptions): http.Agent {
  const agentOptions: https.AgentOptions = {
    ca: opts.ca,
    cert: opts.cert,
    key: opts.key,
    pfx: opts.pfx,
    passphrase: opts.passphrase,
    ...(opts.rejectUnauthorized !== undefined ? { rejectUnauthorized: opts.rejectUnauthorized } : {}),
    timeout: opts.timeout,
    servername: opts.servername,
    ciphers: opts.ciphers,
    honorCipherOrder: opts.honorCipherOrder,
    ecdhCurve: opts.ecdhCurve,
    crl: opts.crl,
    dhparam: opts.dhparam,
    secureOptions: opts.secureOptions,
    secureProtocol: opts.secureProtocol,
    sessionIdContext: opts.sessionIdContext,
  };
  if (cluster.server.startsWith('http:')) {
    if (!cluster.skipTLSVerify)
      throw new Error('HTTP protocol is not allowed when skipTLSVerify is not set or false');
    return new http.Agent(agentOptions);
  }
  return new https.Agent(agentOptions);
}

async function fileOrData(file: string | undefined, data: Buffer | undefined): Promise<Buffer | undefined> {
  if (file) return readFile(file);
  return data;
}

const decoded = (data: string | undefined): Buffer | undefined =>
  data ? Buffer.from(data, 'base64') : undefined;

function exists(path: string): boolean {
  try {
    accessSync(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * Loads the kubeconfig as client-node's `loadFromFile(file)` (with `file`) or `loadFromDefault()`
 * (without) would: `$KUBECONFIG`, else `~/.kube/config`, else the in-cluster service account.
 * Returns a {@link KubeconfigLite} when it can serve the current context, else client-node's
 * `KubeConfig` (imported only then).
 */
export async function loadClusterAccess(file?: string): Promise<ClusterAccess> {
  const lite = await loadLite(file);
  if (lite) return lite;
  const { KubeConfig } = await import('@kubernetes/client-node');
  const kc = new KubeConfig();
  if (file !== undefined) kc.loadFromFile(file);
  else kc.loadFromDefault();
  return kc;
}

async function loadLite(file: string | undefined): Promise<KubeconfigLite | undefined> {
  if (file !== undefined) return liteFromFile(file);
  const env = process.env.KUBECONFIG;
  if (env !== undefined && env.length > 0) {
    const files = env.split(delimiter).filter((f) => f !== '');
    // Several files are merged by client-node; leave that to it.
    return files.length === 1 && files[0] !== undefined ? liteFromFile(files[0]) : undefined;
  }
  if (process.platform === 'win32') return undefined;
  const home = process.env.HOME;
  if (home && exists(home)) {
    const config = join(home, '.kube', 'config');
    if (exists(config)) return liteFromFile(config);
  }
  if (exists(SERVICE_ACCOUNT_TOKEN)) return inClusterAccess();
  return undefined; // client-node's last resort, http://localhost:8080
}

/**
 * client-node's `loadFromCluster(pathPrefix)`: the API server's Service from the environment and
 * the service account's CA and token (the prefix is for tests).
 */
export function inClusterAccess(pathPrefix = ''): KubeconfigLite {
  const host = process.env.KUBERNETES_SERVICE_HOST;
  const port = process.env.KUBERNETES_SERVICE_PORT;
  const scheme = port === '80' || port === '8080' || port === '8001' ? 'http' : 'https';
  const serverHost = host && isIPv6(host) ? `[${host}]` : host;
  return new KubeconfigLite(
    {
      server: `${scheme}://${String(serverHost)}:${String(port)}`,
      caFile: `${pathPrefix}${SERVICE_ACCOUNT_CA}`,
      skipTLSVerify: false,
    },
    { tokenFile: `${pathPrefix}${SERVICE_ACCOUNT_TOKEN}` },
  );
}

type Entry = JsonObject;

const optionalString = (v: unknown): v is string | undefined => v === undefined || typeof v === 'string';

/** The named entry's `key` member, as client-node's `findObject` finds it (first by that name). */
function findNamed(list: unknown, name: unknown, key: string): Entry | undefined {
  if (!Array.isArray(list)) return undefined;
  const found: unknown = list.find((e) => isJsonObject(e) && e.name === name);
  if (!isJsonObject(found)) return undefined;
  return isJsonObject(found[key]) ? found[key] : undefined;
}

/**
 * The current context of a kubeconfig file, when it is one this loader serves exactly as
 * client-node would; undefined otherwise (client-node then loads it, or reports what is wrong).
 */
async function liteFromFile(file: string): Promise<KubeconfigLite | undefined> {
  let doc: unknown;
  try {
    const text = await readFile(file, 'utf8');
    const { parse } = await import('yaml');
    doc = parse(text, { merge: true });
  } catch {
    return undefined;
  }
  return liteFromDocument(doc, dirname(file));
}

/**
 * The current context of a parsed kubeconfig (`yaml`'s `parse(text, { merge: true })`), when it
 * is one {@link KubeconfigLite} serves exactly as client-node would; undefined otherwise.
 * Relative certificate and key paths are taken relative to `root`.
 */
export function liteFromDocument(doc: unknown, root: string): KubeconfigLite | undefined {
  if (!isJsonObject(doc)) return undefined;
  // client-node rejects the whole file when any entry lacks its required fields.
  const list = (name: string): unknown[] | undefined => {
    const l = doc[name];
    return l === undefined || l === null ? [] : Array.isArray(l) ? l : undefined;
  };
  const clusters = list('clusters');
  const users = list('users');
  const contexts = list('contexts');
  if (!clusters || !users || !contexts) return undefined;
  const valid = (e: unknown, body: string, required?: string): boolean =>
    isJsonObject(e) &&
    Boolean(e.name) &&
    isJsonObject(e[body]) &&
    (required === undefined || Boolean(e[body][required]));
  if (
    !clusters.every((c) => valid(c, 'cluster', 'server')) ||
    !users.every(
      (u) => isJsonObject(u) && Boolean(u.name) && (u.user === undefined || isJsonObject(u.user)),
    ) ||
    !contexts.every((c) => valid(c, 'context', 'cluster'))
  )
    return undefined;

  const context = findNamed(contexts, doc['current-context'], 'context');
  if (!context?.user) return undefined;
  const c = findNamed(clusters, context.cluster, 'cluster');
  const u = findNamed(users, context.user, 'user');
  if (!c || !u) return undefined;
  if (c['proxy-url'] !== undefined || u.exec !== undefined || u['auth-provider'] !== undefined)
    return undefined;
  if (u.username !== undefined || u.password !== undefined) return undefined;
  const strings = [
    c.server,
    c['certificate-authority'],
    c['certificate-authority-data'],
    c['tls-server-name'],
    u['client-certificate'],
    u['client-certificate-data'],
    u['client-key'],
    u['client-key-data'],
    u.token,
    u['token-file'],
    u.as,
  ];
  if (typeof c.server !== 'string' || !strings.every(optionalString)) return undefined;

  // Relative certificate and key paths are relative to the kubeconfig; a token file is not.
  const absolute = (p: string | undefined): string | undefined => (p && !isAbsolute(p) ? join(root, p) : p);
  let token = u.token as string | undefined;
  if (!token && u['token-file']) token = readFileSync(u['token-file'] as string, 'utf8');
  return new KubeconfigLite(
    {
      server: c.server.replace(/\/$/, ''),
      caFile: absolute(c['certificate-authority'] as string | undefined),
      caData: c['certificate-authority-data'] as string | undefined,
      skipTLSVerify: c['insecure-skip-tls-verify'] === true,
      tlsServerName: c['tls-server-name'] as string | undefined,
    },
    {
      certFile: absolute(u['client-certificate'] as string | undefined),
      certData: u['client-certificate-data'] as string | undefined,
      keyFile: absolute(u['client-key'] as string | undefined),
      keyData: u['client-key-data'] as string | undefined,
      token,
      impersonateUser: u.as as string | undefined,
    },
  );
}
