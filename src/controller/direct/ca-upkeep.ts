/**
 * The controller's CA across replicas. Every replica watches the CA Secret and adopts what it
 * shows, so a rotation by any replica reaches all of them and they sign with one CA; every
 * replica checks whether a rotation is due, and the CA store's resourceVersion precondition lets
 * one of them write it (the others adopt it). After any change of the signing CA, however it
 * came, `onChanged` runs once: the listener's trust and every runtime's certificates follow.
 */
import type { V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import type { ClusterAccess } from '../../kube/cluster-access.js';
import { createListerWatcher } from '../../kube/list-watch.js';
import { Reflector } from '../../kube/reflector.js';
import { stripManagedFields } from '../../kube/reflector-options.js';
import type { CaStore } from '../../pki/ca-store.js';

/** When the CA is rotated (direct mode's `caRotation`). */
export interface CaRotationSettings {
  readonly renewBeforeMs: number;
  readonly graceMs: number;
  /** How often to check (default hourly). */
  readonly checkEveryMs?: number;
}

/** Settings of a {@link CaUpkeep}. */
export interface CaUpkeepOptions {
  readonly cas: CaStore;
  /** The KCP. */
  readonly kcp: ClusterAccess;
  /** Rotate when due; never rotated here when undefined (only followed). */
  readonly rotation?: CaRotationSettings;
  readonly logger: Logger;
  /** The signing CA changed (rotated here or by another replica). */
  readonly onChanged: () => Promise<void>;
}

/** See the file comment. */
export class CaUpkeep {
  private readonly secret: Reflector<V1Secret>;
  /** CA operations one at a time: an adoption never interleaves with a rotation. */
  private chain: Promise<unknown> = Promise.resolve();
  /** The store's change count `onChanged` last ran for. */
  private handled: number;
  private timer: NodeJS.Timeout | undefined;

  constructor(private readonly o: CaUpkeepOptions) {
    this.handled = o.cas.changes;
    const { namespace, name } = o.cas.secret;
    this.secret = new Reflector<V1Secret>({
      name: 'CA secret',
      listerWatcher: createListerWatcher<V1Secret>(
        o.kcp,
        `/api/v1/namespaces/${encodeURIComponent(namespace)}/secrets`,
      ),
      fieldSelector: `metadata.name=${name}`,
      transform: stripManagedFields,
      logger: o.logger,
      handlers: {
        onAdd: (s) => {
          this.follow(s);
        },
        onUpdate: (_old, s) => {
          this.follow(s);
        },
      },
    });
  }

  /** Follows the Secret (resolves once it was listed) and checks for a due rotation periodically. */
  async start(): Promise<void> {
    this.secret.start();
    await this.secret.waitForSync();
    const rotation = this.o.rotation;
    if (rotation === undefined) return;
    this.timer = setInterval(() => {
      this.run('CA rotation failed', async () => {
        const outcome = await this.o.cas.rotateIfExpiring(rotation.renewBeforeMs, rotation.graceMs);
        if (outcome !== 'current') this.o.logger.info({ outcome }, 'CA renewed');
      });
    }, rotation.checkEveryMs ?? 3600_000);
    this.timer.unref();
  }

  /** Rotates the CA now (or adopts another replica's rotation that came first), and follows up. */
  async rotate(graceMs: number): Promise<void> {
    await this.serialized(async () => {
      await this.o.cas.rotate(graceMs);
      await this.followUp();
    });
  }

  /** Stops following and checking (an operation under way finishes). */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.secret.stop();
    await this.chain;
  }

  private follow(secret: V1Secret): void {
    this.run('cannot adopt the CA Secret', async () => {
      if (await this.o.cas.adopt(secret)) this.o.logger.info({}, 'CA changed by another replica; adopted');
    });
  }

  private run(failure: string, op: () => Promise<void>): void {
    this.serialized(async () => {
      await op();
      await this.followUp();
    }).catch((err: unknown) => {
      this.o.logger.error({ err }, failure);
    });
  }

  /** Runs `onChanged` if the signing CA changed since it last ran. */
  private async followUp(): Promise<void> {
    const changes = this.o.cas.changes;
    if (changes === this.handled) return;
    this.handled = changes;
    await this.o.onChanged();
  }

  private serialized<T>(op: () => Promise<T>): Promise<T> {
    const result = this.chain.then(op);
    this.chain = result.catch(() => undefined);
    return result;
  }
}
