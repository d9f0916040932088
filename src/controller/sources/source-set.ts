/**
 * Watches the sources on the KCP — the pull Secret, the ClusterTrustBundle (optional), the
 * webhook ConfigMap and KIM's manifests ConfigMap (optional) — and reports changes of their
 * content. A change is a change of the content version (content-hash.ts): relists, resyncs,
 * metadata-only updates and restarts are not changes. A missing or invalid source is reported (log, metric, Event) as a problem;
 * deciding not to propagate it is the consumers' job, and `problems()` tells them when.
 */
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import type { ClusterTrustBundle } from '../../api/cluster-trust-bundle.js';
import { CONFIG_MAP_KEY } from '../../api/webhook-features.js';
import { KubeListWatch } from '../../kube/list-watch.js';
import type { ListerWatcher } from '../../kube/lister-watcher.js';
import { TRUST_BUNDLE_KIND } from '../../kube/trust-bundle-api.js';
import { TrustBundleListWatch } from '../../kube/trust-bundle-list-watch.js';
import { Reflector } from '../../kube/reflector.js';
import type { KubeObject } from '../../kube/store.js';
import type { Logger } from '../../telemetry/logger.js';
import { nullEventRecorder, type EventObjectRef, type EventRecorder } from '../../kube/event-recorder.js';
import {
  clusterTrustBundleContentVersion,
  configMapContentVersion,
  secretContentVersion,
  sourceSetVersion,
} from './content-hash.js';
import {
  SOURCE_KINDS,
  type SourceKind,
  type SourceProblem,
  type SourceSnapshot,
  type SourceVersions,
  type SourceWatcher,
  type SourceWatcherOptions,
} from './source-watcher.js';
import {
  configMapWarnings,
  validateClusterTrustBundle,
  validateConfigMap,
  validateManifestsConfigMap,
  validatePullSecret,
} from './source-validation.js';

interface SourceDef {
  readonly kind: SourceKind;
  /** Store key: `namespace/name`, or `name` when cluster-scoped. */
  readonly key: string;
  /** Events' object; a ClusterTrustBundle's apiVersion follows the version served. */
  ref: EventObjectRef;
  readonly reflector: Reflector<KubeObject>;
  readonly version: (obj: KubeObject) => string;
  readonly validate: (obj: KubeObject) => string | undefined;
  /** What a usable object holds that is accepted with a warning; logged once per content. */
  readonly warnings?: (obj: KubeObject) => readonly string[];
  readonly log: Logger;
}

interface SourceState {
  obj?: KubeObject;
  version?: string;
  problem?: SourceProblem;
}

const sameProblem = (a: SourceProblem | undefined, b: SourceProblem | undefined): boolean =>
  a?.type === b?.type && a?.reason === b?.reason;

class KubeSourceWatcher implements SourceWatcher {
  private readonly defs: SourceDef[] = [];
  private readonly state: Record<SourceKind, SourceState> = {
    pullSecret: {},
    clusterTrustBundle: {},
    configMap: {},
    manifestsConfigMap: {},
  };
  private readonly listeners = new Set<(s: SourceSnapshot, changed: readonly SourceKind[]) => void>();
  private readonly events: EventRecorder;
  private readonly watched: readonly SourceKind[];
  private isSynced = false;
  private cached: SourceSnapshot | undefined;

  constructor(private readonly o: SourceWatcherOptions) {
    this.events = o.events ?? nullEventRecorder;
    const ns = o.namespace;
    const reflectorLog = o.logger.child({ part: 'source-reflector' });
    const def = <T extends KubeObject>(
      kind: SourceKind,
      listerWatcher: ListerWatcher<KubeObject>,
      name: string,
      namespace: string | undefined,
      ref: Omit<EventObjectRef, 'name' | 'namespace'>,
      version: (obj: T) => string,
      validate: (obj: T) => string | undefined,
      warnings?: (obj: T) => readonly string[],
    ): SourceDef => {
      const key = namespace === undefined ? name : `${namespace}/${name}`;
      const reflector = new Reflector<KubeObject>({
        name: `${kind} ${key}`,
        listerWatcher,
        // Only the one object: the cache never holds any other Secret of the namespace.
        fieldSelector: `metadata.name=${name}`,
        logger: reflectorLog,
      });
      const d: SourceDef = {
        kind,
        key,
        ref: { ...ref, name, namespace },
        reflector,
        version: version as (obj: KubeObject) => string,
        validate: validate as (obj: KubeObject) => string | undefined,
        warnings: warnings as ((obj: KubeObject) => readonly string[]) | undefined,
        log: o.logger.child({ source: kind, objectKey: key }),
      };
      const refresh = (): void => {
        this.refresh(d);
      };
      reflector.addEventHandler({ onAdd: refresh, onUpdate: refresh, onDelete: refresh });
      this.defs.push(d);
      return d;
    };
    const at = (path: string): ListerWatcher<KubeObject> => new KubeListWatch<KubeObject>(o.kubeConfig, path);
    def<V1Secret>(
      'pullSecret',
      at(`/api/v1/namespaces/${ns}/secrets`),
      o.pullSecretName,
      ns,
      { apiVersion: 'v1', kind: 'Secret' },
      secretContentVersion,
      validatePullSecret,
    );
    if (o.clusterTrustBundleName !== undefined) {
      // The KCP's own version (it may be a 1.37 serving v1 only); the content version is the
      // spec's alone, so the version read at changes no set version.
      const ctb: { def?: SourceDef } = {};
      const lw = new TrustBundleListWatch<KubeObject>(o.kubeConfig, {
        onApi: (api) => {
          if (ctb.def && api.served) ctb.def.ref = { ...ctb.def.ref, apiVersion: api.apiVersion };
        },
      });
      ctb.def = def<ClusterTrustBundle>(
        'clusterTrustBundle',
        lw,
        o.clusterTrustBundleName,
        undefined,
        { apiVersion: 'certificates.k8s.io/v1', kind: TRUST_BUNDLE_KIND },
        clusterTrustBundleContentVersion,
        validateClusterTrustBundle,
      );
    }
    const cmKey = o.configMapKey ?? CONFIG_MAP_KEY;
    def<V1ConfigMap>(
      'configMap',
      at(`/api/v1/namespaces/${ns}/configmaps`),
      o.configMapName,
      ns,
      { apiVersion: 'v1', kind: 'ConfigMap' },
      configMapContentVersion,
      (cm) => validateConfigMap(cm, cmKey),
      (cm) => configMapWarnings(cm, cmKey),
    );
    if (o.manifestsConfigMapName !== undefined) {
      def<V1ConfigMap>(
        'manifestsConfigMap',
        at(`/api/v1/namespaces/${ns}/configmaps`),
        o.manifestsConfigMapName,
        ns,
        { apiVersion: 'v1', kind: 'ConfigMap' },
        configMapContentVersion,
        validateManifestsConfigMap,
      );
    }
    this.watched = this.defs.map((d) => d.kind);
    // Export every series from the start, so "no problem" reads 0 rather than nothing.
    for (const d of this.defs) {
      for (const reason of ['missing', 'invalid'] as const)
        o.metrics?.sourceProblems.set({ source: d.kind, reason }, 0);
      o.metrics?.sourceChanges.inc({ source: d.kind }, 0);
    }
  }

  async start(): Promise<void> {
    for (const d of this.defs) d.reflector.start();
    await Promise.all(this.defs.map((d) => d.reflector.waitForSync()));
    // The first lists are the baseline, not changes: a restart must not look like a change.
    for (const d of this.defs) this.observe(d);
    this.isSynced = true;
    this.o.logger.info(
      { version: this.snapshot().version, problems: this.problems().length },
      'sources synced',
    );
  }

  async stop(): Promise<void> {
    this.isSynced = false;
    await Promise.all(this.defs.map((d) => d.reflector.stop()));
  }

  synced(): boolean {
    return this.isSynced;
  }

  async relist(signal?: AbortSignal): Promise<void> {
    // Each reflector dispatches the difference of its fresh list (refresh() observes it) before
    // its relist resolves, so the state is current once all of them have.
    await Promise.all(this.defs.map((d) => d.reflector.relist(signal)));
  }

  snapshot(): SourceSnapshot {
    if (this.cached) return this.cached;
    const versions: SourceVersions = {
      pullSecret: this.state.pullSecret.version,
      clusterTrustBundle: this.state.clusterTrustBundle.version,
      configMap: this.state.configMap.version,
      // Undefined while unwatched: no reflector sets it.
      manifestsConfigMap: this.state.manifestsConfigMap.version,
    };
    const snap: SourceSnapshot = {
      pullSecret: this.state.pullSecret.obj,
      clusterTrustBundle: this.state.clusterTrustBundle.obj as ClusterTrustBundle | undefined,
      configMap: this.state.configMap.obj,
      manifestsConfigMap: this.state.manifestsConfigMap.obj,
      versions,
      watched: this.watched,
      version: sourceSetVersion(versions, this.watched),
      problems: this.problems(),
    };
    this.cached = snap;
    return snap;
  }

  problems(): readonly SourceProblem[] {
    return SOURCE_KINDS.flatMap((k) => {
      const p = this.state[k].problem;
      return p ? [p] : [];
    });
  }

  onChange(listener: (snapshot: SourceSnapshot, changed: readonly SourceKind[]) => void): () => void {
    this.listeners.add(listener);
    return () => {
      this.listeners.delete(listener);
    };
  }

  /** A reflector event: before the baseline nothing counts, afterwards content changes do. */
  private refresh(d: SourceDef): void {
    if (!this.isSynced) return;
    const before = this.state[d.kind].version;
    this.observe(d);
    const after = this.state[d.kind].version;
    if (before === after) return;
    this.o.metrics?.sourceChanges.inc({ source: d.kind });
    d.log.info({ from: before ?? null, to: after ?? null }, 'source content changed');
    this.events.record({
      regarding: d.ref,
      type: 'Normal',
      reason: 'SourceChanged',
      action: 'Watch',
      note: `content of ${d.ref.kind} ${d.key} changed to version ${after ?? '(deleted)'}`,
    });
    const snap = this.snapshot();
    for (const l of [...this.listeners]) {
      try {
        l(snap, [d.kind]);
      } catch (err) {
        d.log.error({ err }, 'source change listener threw');
      }
    }
  }

  /** Reads the cached object, its version and its problem; reports problem transitions. */
  private observe(d: SourceDef): void {
    const obj = d.reflector.store.get(d.key);
    const s = this.state[d.kind];
    const before = s.version;
    s.obj = obj;
    s.version = obj ? d.version(obj) : undefined;
    this.cached = undefined;
    let problem: SourceProblem | undefined;
    if (!obj) {
      problem = { source: d.kind, type: 'missing', reason: `${d.ref.kind} ${d.key} does not exist` };
    } else {
      const invalid = d.validate(obj);
      if (invalid !== undefined) problem = { source: d.kind, type: 'invalid', reason: invalid };
    }
    if (obj && !problem && s.version !== before) this.reportWarnings(d, obj);
    const previous = s.problem;
    s.problem = problem;
    if (sameProblem(previous, problem)) return;
    const m = this.o.metrics?.sourceProblems;
    if (previous) m?.set({ source: d.kind, reason: previous.type }, 0);
    if (problem) {
      m?.set({ source: d.kind, reason: problem.type }, 1);
      d.log.warn({ problem: problem.type, reason: problem.reason }, 'source not usable; not propagated');
      this.events.record({
        regarding: d.ref,
        type: 'Warning',
        reason: problem.type === 'missing' ? 'SourceMissing' : 'SourceInvalid',
        action: 'Validate',
        note: `${d.ref.kind} ${d.key} is ${problem.type}: ${problem.reason}; not propagated until fixed`,
      });
    } else if (previous) {
      d.log.info({}, 'source usable again');
      this.events.record({
        regarding: d.ref,
        type: 'Normal',
        reason: 'SourceRecovered',
        action: 'Validate',
        note: `${d.ref.kind} ${d.key} is usable again`,
      });
    }
  }

  /** Once per content: what upstream accepts and we read with a warning (the field named). */
  private reportWarnings(d: SourceDef, obj: KubeObject): void {
    const warnings = d.warnings?.(obj) ?? [];
    if (warnings.length === 0) return;
    d.log.warn({ warnings }, 'source accepted with warnings');
    this.events.record({
      regarding: d.ref,
      type: 'Warning',
      reason: 'SourceWarnings',
      action: 'Validate',
      note: `${d.ref.kind} ${d.key} is used, with warnings: ${warnings.join('; ')}`.slice(0, 1000),
    });
  }
}

/** A watcher of the sources; call `start()` and wait for it before reading snapshots. */
export function createSourceWatcher(opts: SourceWatcherOptions): SourceWatcher {
  return new KubeSourceWatcher(opts);
}
