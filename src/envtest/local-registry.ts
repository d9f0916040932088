import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { ControlPlaneError } from './errors.js';
import { freePort } from './free-port.js';
import { ManagedProcess } from './managed-process.js';
import { runCommand } from './run-command.js';
import { probe } from './wait-ready.js';

/** Basic-auth credentials of a registry. */
export interface RegistryCredentials {
  readonly username: string;
  readonly password: string;
}

/** Options for a local registry. */
export interface LocalRegistryOptions {
  /** Its storage, config and log. */
  readonly dir: string;
  /** Require these credentials (htpasswd); absent: an open registry. */
  readonly credentials?: RegistryCredentials;
  /** The registry binary (Debian's `docker-registry`, distribution 2.8). */
  readonly binary?: string;
}

const hint = 'the local registries need Debian packages: run scripts/install-node-host.sh';

/**
 * A Docker distribution registry on loopback (plain HTTP: only this machine reaches it), open or
 * behind htpasswd credentials, as upstream's e2e runs two registries on k3d.
 */
export class LocalRegistry {
  private constructor(
    /** `127.0.0.1:<port>`: the registry part of image references. */
    readonly host: string,
    readonly credentials: RegistryCredentials | undefined,
    private readonly process: ManagedProcess,
  ) {}

  /** Starts the registry and waits until `/v2/` answers. */
  static async start(o: LocalRegistryOptions): Promise<LocalRegistry> {
    await mkdir(join(o.dir, 'storage'), { recursive: true });
    const auth = o.credentials
      ? {
          htpasswd: { realm: 'rtb-local', path: join(o.dir, 'htpasswd') },
        }
      : undefined;
    if (o.credentials) {
      // bcrypt is what distribution accepts; htpasswd (apache2-utils) makes it.
      const line = await runCommand('htpasswd', ['-Bbn', o.credentials.username, o.credentials.password], {
        missingHint: hint,
      });
      await writeFile(join(o.dir, 'htpasswd'), line.trim() + '\n', { mode: 0o600 });
    }
    let lastError: unknown;
    for (let attempt = 0; attempt < 3; attempt++) {
      const port = await freePort();
      const config = join(o.dir, 'config.yml');
      await writeFile(
        config,
        stringify({
          version: 0.1,
          log: { level: 'warn', accesslog: { disabled: true } },
          storage: { filesystem: { rootdirectory: join(o.dir, 'storage') }, delete: { enabled: true } },
          http: { addr: `127.0.0.1:${port}`, headers: { 'X-Content-Type-Options': ['nosniff'] } },
          auth,
        }),
      );
      const proc = new ManagedProcess(
        `registry(${o.credentials ? 'secured' : 'open'})`,
        o.binary ?? 'docker-registry',
        ['serve', config],
        join(o.dir, 'registry.log'),
      );
      proc.start();
      try {
        await waitAnswers(proc, `http://127.0.0.1:${port}/v2/`);
        return new LocalRegistry(`127.0.0.1:${port}`, o.credentials, proc);
      } catch (error) {
        lastError = error;
        await proc.stop(1_000);
      }
    }
    throw lastError;
  }

  /**
   * Copies an OCI image layout's tag (or an OCI archive's, with `transport: 'oci-archive'`) into
   * `<host>/<repository>:<as>` (skopeo); `as` defaults to the source tag.
   */
  async push(
    layoutDir: string,
    tag: string,
    repository: string,
    o: { readonly transport?: 'oci' | 'oci-archive'; readonly as?: string } = {},
  ): Promise<string> {
    const reference = `${this.host}/${repository}:${o.as ?? tag}`;
    const creds = this.credentials
      ? ['--dest-creds', `${this.credentials.username}:${this.credentials.password}`]
      : [];
    await runCommand(
      'skopeo',
      [
        'copy',
        '--quiet',
        '--dest-tls-verify=false',
        ...creds,
        `${o.transport ?? 'oci'}:${layoutDir}:${tag}`,
        `docker://${reference}`,
      ],
      { missingHint: hint },
    );
    return reference;
  }

  /** The content of a `kubernetes.io/dockerconfigjson` Secret for this registry. */
  dockerConfigJson(): string {
    if (!this.credentials) throw new ControlPlaneError(`registry ${this.host} needs no credentials`);
    const { username, password } = this.credentials;
    const auth = Buffer.from(`${username}:${password}`).toString('base64');
    return JSON.stringify({ auths: { [this.host]: { username, password, auth } } });
  }

  /** Stops the registry (its storage stays in its folder). */
  stop(): Promise<void> {
    return this.process.stop(5_000);
  }
}

async function waitAnswers(proc: ManagedProcess, url: string, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (!proc.running) throw new ControlPlaneError(`${proc.name} exited while starting:\n${proc.logTail()}`);
    // 401 is the secured registry's answer to an anonymous client: it is up.
    const status = await probe(url);
    if (status === 200 || status === 401) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new ControlPlaneError(`${proc.name} did not answer at ${url}:\n${proc.logTail()}`);
}
