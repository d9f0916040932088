/**
 * A stand-in for KIM in the controller's integration tests: it consumes the signal the way
 * KIM does and counts what it consumed, so a test can assert how often each Runtime was
 * signalled. It builds on controller-fixtures.ts (the KCP's clients), so tests import it from
 * here: re-exported from there it would make an import cycle.
 */
import {
  FORCE_PATCH_RECONCILIATION,
  RUNTIME_GROUP,
  RUNTIME_PLURAL,
  RUNTIME_VERSION,
  type Runtime,
} from '../../src/api/runtime.js';
import { SIGNALLED_VERSION_ANNOTATION } from '../../src/controller/annotate/signal-decision.js';
import { KubeListWatch } from '../../src/kube/list-watch.js';
import { Reflector } from '../../src/kube/reflector.js';
import { NS, patchRuntime, type Kcp } from './controller-fixtures.js';

/**
 * Plays KIM: every time a Runtime carries the signal it counts one consumption and removes the
 * signal, as KIM's RuntimeController does after its patch attempt.
 */
export class FakeKim {
  readonly consumed = new Map<string, number>();
  /** Every consumption in order, with the source-set version the controller stamped on the Runtime. */
  readonly signals: { readonly runtime: string; readonly version: string | undefined }[] = [];
  private readonly reflector: Reflector<Runtime>;
  private readonly carrying = new Set<string>();
  private readonly removals = new Set<Promise<void>>();

  constructor(
    private readonly kcp: Kcp,
    private readonly signal: 'annotation' | 'label' = 'annotation',
  ) {
    this.reflector = new Reflector<Runtime>({
      name: 'fake-kim',
      listerWatcher: new KubeListWatch<Runtime>(
        kcp.kc,
        `/apis/${RUNTIME_GROUP}/${RUNTIME_VERSION}/namespaces/${NS}/${RUNTIME_PLURAL}`,
      ),
    });
    const seen = (rt: Runtime): void => {
      const name = rt.metadata?.name ?? '';
      const map = this.signal === 'annotation' ? rt.metadata?.annotations : rt.metadata?.labels;
      const has = map?.[FORCE_PATCH_RECONCILIATION] === 'true';
      if (!has) {
        this.carrying.delete(name);
        return;
      }
      if (this.carrying.has(name)) return;
      this.carrying.add(name);
      this.consumed.set(name, (this.consumed.get(name) ?? 0) + 1);
      this.signals.push({ runtime: name, version: rt.metadata?.annotations?.[SIGNALLED_VERSION_ANNOTATION] });
      const field = this.signal === 'annotation' ? 'annotations' : 'labels';
      const p = patchRuntime(this.kcp, name, {
        metadata: { [field]: { [FORCE_PATCH_RECONCILIATION]: null } },
      })
        .catch(() => undefined)
        .finally(() => this.removals.delete(p));
      this.removals.add(p);
    };
    this.reflector.addEventHandler({
      onAdd: seen,
      onUpdate: (_o, n) => {
        seen(n);
      },
    });
  }

  async start(): Promise<void> {
    this.reflector.start();
    await this.reflector.waitForSync();
  }

  async stop(): Promise<void> {
    await this.reflector.stop();
    await Promise.all([...this.removals]);
  }

  /** Sum of consumptions. */
  total(): number {
    let n = 0;
    for (const v of this.consumed.values()) n += v;
    return n;
  }

  /** Per Runtime name, consumptions since `before` (a copy of `consumed` taken earlier). */
  since(before: ReadonlyMap<string, number>): Map<string, number> {
    const out = new Map<string, number>();
    for (const [k, v] of this.consumed) {
      const d = v - (before.get(k) ?? 0);
      if (d > 0) out.set(k, d);
    }
    return out;
  }

  /** Whether no Runtime carries the signal and no removal is in flight. */
  idle(): boolean {
    return this.carrying.size === 0 && this.removals.size === 0;
  }
}
