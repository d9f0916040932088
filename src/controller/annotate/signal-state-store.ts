/**
 * Keeps the annotate mode's {@link SignalState} on the KCP, in one key of a ConfigMap
 * (`kcp-system/rt-bootstrapper-controller-state` by default), so a restart or a new leader
 * knows what was signalled. Writes carry the resourceVersion read, so a stale writer fails
 * with a conflict instead of overwriting a newer state.
 */
import { CoreV1Api, type KubeConfig, type V1ConfigMap } from '@kubernetes/client-node';
import { FIELD_MANAGER } from '../../api/runtime-names.js';
import { statusCodeOf } from '../../kube/kube-errors.js';
import { DEFAULT_REQUEST_TIMEOUT_MS, requestOptions } from './request-options.js';
import { SOURCE_KINDS, type SourceKind } from '../sources/source-watcher.js';
import type { SignalState } from './signal-decision.js';

/** The ConfigMap key holding the annotate mode's state. */
export const SIGNAL_STATE_KEY = 'annotate-mode.json';

/** Reading or writing the state failed. */
export class SignalStateError extends Error {
  override readonly name = 'SignalStateError';
}

/** Parses a stored state; undefined if absent or unreadable (then a new baseline is taken). */
export function parseSignalState(text: string | undefined): SignalState | undefined {
  if (text === undefined) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (typeof value !== 'object' || value === null) return undefined;
  const v = value as Record<string, unknown>;
  if (typeof v.version !== 'string' || v.version === '') return undefined;
  if (typeof v.changeTime !== 'string') return undefined;
  if (v.phase !== 'Signalling' && v.phase !== 'Completed') return undefined;
  // Decisions compare these when the watched sources change: only well-formed ones are used.
  if (v.watched !== undefined && !(Array.isArray(v.watched) && v.watched.every(isSourceKind)))
    return undefined;
  if (v.sources !== undefined && !isVersions(v.sources)) return undefined;
  return value as SignalState;
}

function isSourceKind(value: unknown): value is SourceKind {
  return SOURCE_KINDS.includes(value as SourceKind);
}

function isVersions(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  return Object.entries(value).every(([k, v]) => isSourceKind(k) && typeof v === 'string');
}

/** The text stored for `state`. */
export function serializeSignalState(state: SignalState): string {
  return JSON.stringify(state);
}

/** What {@link SignalStateStore.read} found. */
export interface StoredSignalState {
  readonly state: SignalState | undefined;
  /** The ConfigMap's resourceVersion; undefined if it does not exist. */
  readonly resourceVersion: string | undefined;
}

/** Reads and writes the state ConfigMap. */
export class SignalStateStore {
  private readonly core: CoreV1Api;

  constructor(
    kubeConfig: KubeConfig,
    private readonly namespace: string,
    private readonly name: string,
  ) {
    this.core = kubeConfig.makeApiClient(CoreV1Api);
  }

  /** The stored state. */
  async read(): Promise<StoredSignalState> {
    let cm: V1ConfigMap;
    try {
      cm = await this.core.readNamespacedConfigMap(
        { name: this.name, namespace: this.namespace },
        requestOptions(DEFAULT_REQUEST_TIMEOUT_MS),
      );
    } catch (cause) {
      if (statusCodeOf(cause) === 404) return { state: undefined, resourceVersion: undefined };
      throw new SignalStateError(`cannot read ConfigMap ${this.namespace}/${this.name}`, { cause });
    }
    return {
      state: parseSignalState(cm.data?.[SIGNAL_STATE_KEY]),
      resourceVersion: cm.metadata?.resourceVersion,
    };
  }

  /**
   * Writes `state`, creating the ConfigMap if `resourceVersion` is undefined, else replacing
   * the version read (other keys are kept). Rejects on a conflict.
   */
  async write(state: SignalState, resourceVersion: string | undefined): Promise<void> {
    const text = serializeSignalState(state);
    try {
      if (resourceVersion === undefined) {
        await this.core.createNamespacedConfigMap(
          {
            namespace: this.namespace,
            fieldManager: FIELD_MANAGER,
            body: {
              metadata: {
                name: this.name,
                namespace: this.namespace,
                labels: { 'app.kubernetes.io/managed-by': 'rt-bootstrapper' },
              },
              data: { [SIGNAL_STATE_KEY]: text },
            },
          },
          requestOptions(DEFAULT_REQUEST_TIMEOUT_MS),
        );
        return;
      }
      const current = await this.core.readNamespacedConfigMap(
        { name: this.name, namespace: this.namespace },
        requestOptions(DEFAULT_REQUEST_TIMEOUT_MS),
      );
      if (current.metadata?.resourceVersion !== resourceVersion) {
        throw new SignalStateError(`ConfigMap ${this.namespace}/${this.name} changed since it was read`);
      }
      await this.core.replaceNamespacedConfigMap(
        {
          name: this.name,
          namespace: this.namespace,
          fieldManager: FIELD_MANAGER,
          body: { ...current, data: { ...current.data, [SIGNAL_STATE_KEY]: text } },
        },
        requestOptions(DEFAULT_REQUEST_TIMEOUT_MS),
      );
    } catch (cause) {
      if (cause instanceof SignalStateError) throw cause;
      throw new SignalStateError(`cannot write ConfigMap ${this.namespace}/${this.name}`, { cause });
    }
  }
}
