/**
 * Pull credentials as a `kubernetes.io/dockerconfigjson` Secret holds them, looked up by registry
 * host as container runtimes do (by the host a key names, Docker Hub under any of its names).
 */
import { asJsonObject } from '../../api/json-object.js';
import { DOCKER_HUB_REGISTRY } from '../../image/image-reference.js';

/** A user name and password for one registry. */
export interface RegistryLogin {
  readonly username: string;
  readonly password: string;
}

/** The `.dockerconfigjson` text is not JSON of that shape. */
export class DockerConfigError extends Error {
  override readonly name = 'DockerConfigError';
}

// The names Docker Hub's credentials are stored under (docker login writes the first).
const DOCKER_HUB_ALIASES = new Set([
  'index.docker.io',
  'registry-1.docker.io',
  'registry.hub.docker.com',
  DOCKER_HUB_REGISTRY,
]);

/**
 * The registry a credentials key names: keys may be URLs (`https://index.docker.io/v1/`) or
 * `host[:port]`; Docker Hub's names all read as `docker.io`.
 */
export function credentialsKeyRegistry(key: string): string {
  const host = key.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '').split('/')[0] ?? '';
  return DOCKER_HUB_ALIASES.has(host) ? DOCKER_HUB_REGISTRY : host;
}

function loginOf(entry: unknown): RegistryLogin | undefined {
  const o = asJsonObject(entry);
  if (o === undefined) return undefined;
  if (typeof o.auth === 'string' && o.auth !== '') {
    const decoded = Buffer.from(o.auth, 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon > 0) return { username: decoded.slice(0, colon), password: decoded.slice(colon + 1) };
  }
  if (typeof o.username === 'string' && o.username !== '' && typeof o.password === 'string')
    return { username: o.username, password: o.password };
  return undefined;
}

/**
 * Reads a `.dockerconfigjson` (or the older `.dockercfg` map without `auths`) into logins by
 * registry (`docker.io` for Docker Hub). An entry's `auth` (base64 `user:password`) wins over its
 * `username`/`password`, as in the runtimes; entries with neither are left out; where two keys
 * name the same registry, the first wins.
 *
 * @throws DockerConfigError when the text is not a JSON object (the message never quotes it).
 */
export function readDockerConfig(text: string): ReadonlyMap<string, RegistryLogin> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Without the parse error as cause: its message quotes the text, which holds credentials.
    throw new DockerConfigError('the pull Secret is not JSON');
  }
  const root = asJsonObject(parsed);
  if (root === undefined) throw new DockerConfigError('the pull Secret is not a JSON object');
  const auths = root.auths === undefined ? root : asJsonObject(root.auths);
  if (auths === undefined) throw new DockerConfigError('the pull Secret\'s "auths" is not an object');
  const logins = new Map<string, RegistryLogin>();
  for (const [key, entry] of Object.entries(auths)) {
    const registry = credentialsKeyRegistry(key);
    const login = loginOf(entry);
    if (registry !== '' && login !== undefined && !logins.has(registry)) logins.set(registry, login);
  }
  return logins;
}
