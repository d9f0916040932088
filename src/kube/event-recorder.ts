/**
 * A Kubernetes Event recorder (events.k8s.io/v1) for the controller and the webhook's restarter. Events are best effort:
 * recording never blocks or fails the caller, and identical events within a window are sent
 * once, so a flapping source cannot flood the API server. Notes are written by our code from
 * names and reasons only — never from object contents (the pull Secret's data must not leak).
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from '../telemetry/logger.js';
import type { ClusterAccess } from './cluster-access.js';
import { kubeRequest } from './kube-request.js';
import { MicroTime } from './lease-decision.js';

/** What an event is about. */
export interface EventObjectRef {
  readonly apiVersion: string;
  readonly kind: string;
  readonly name: string;
  /** Absent for cluster-scoped objects. */
  readonly namespace?: string;
  readonly uid?: string;
}

/** One event. */
export interface ControllerEvent {
  readonly regarding: EventObjectRef;
  readonly type: 'Normal' | 'Warning';
  /** UpperCamelCase, e.g. `SourceMissing`. */
  readonly reason: string;
  /** What the controller did or failed to do, UpperCamelCase, e.g. `Watch`, `Signal`. */
  readonly action: string;
  /** Human-readable; truncated to the API's 1 KiB. */
  readonly note: string;
}

/** Records events; see {@link createEventRecorder}. */
export interface EventRecorder {
  /** Queues the event for sending; never throws. */
  record(event: ControllerEvent): void;
  /** Resolves when every event recorded so far has been sent (or failed). */
  flush(): Promise<void>;
}

/** A recorder that drops everything (tests, tools). */
export const nullEventRecorder: EventRecorder = {
  record: () => undefined,
  flush: () => Promise.resolve(),
};

/** Settings of {@link createEventRecorder}. */
export interface EventRecorderOptions {
  /** The cluster (client-node's `KubeConfig` fits); events are raw requests, no client-node code. */
  readonly kubeConfig: ClusterAccess;
  /**
   * Where events about cluster-scoped objects go: the API server takes an events.k8s.io/v1 Event
   * about one only in `default` or `kube-system`, so any other namespace given here means `default`.
   */
  readonly namespace: string;
  /** `reportingController`, e.g. `rt-bootstrapper.kyma-project.io/controller`. */
  readonly reportingController: string;
  /** `reportingInstance`: this process (the Pod name). */
  readonly reportingInstance: string;
  readonly logger: Logger;
  /** Identical events within this window are sent once (default 10 min). */
  readonly dedupeWindowMs?: number;
}

const NOTE_LIMIT = 1024;
const MAX_REMEMBERED = 1000;

/** A recorder writing events.k8s.io/v1 Events through the API server. */
export function createEventRecorder(o: EventRecorderOptions): EventRecorder {
  const windowMs = o.dedupeWindowMs ?? 10 * 60_000;
  // The API server refuses an Event about a cluster-scoped object (a RolloutPolicy, a
  // ClusterTrustBundle) in any other namespace.
  const clusterScoped = o.namespace === 'kube-system' ? o.namespace : 'default';
  const lastSent = new Map<string, number>();
  const inFlight = new Set<Promise<void>>();

  const send = async (e: ControllerEvent): Promise<void> => {
    const namespace = e.regarding.namespace ?? clusterScoped;
    const note = Buffer.byteLength(e.note) > NOTE_LIMIT ? `${e.note.slice(0, NOTE_LIMIT - 3)}...` : e.note;
    try {
      await kubeRequest(o.kubeConfig, {
        method: 'POST',
        path: `/apis/events.k8s.io/v1/namespaces/${encodeURIComponent(namespace)}/events`,
        parseResponse: false,
        body: {
          apiVersion: 'events.k8s.io/v1',
          kind: 'Event',
          metadata: { name: `${e.regarding.name}.${randomBytes(8).toString('hex')}`, namespace },
          eventTime: new MicroTime(),
          reportingController: o.reportingController,
          reportingInstance: o.reportingInstance,
          action: e.action,
          reason: e.reason,
          type: e.type,
          note,
          regarding: {
            apiVersion: e.regarding.apiVersion,
            kind: e.regarding.kind,
            name: e.regarding.name,
            namespace: e.regarding.namespace,
            uid: e.regarding.uid,
          },
        },
      });
    } catch (err) {
      o.logger.warn({ err, reason: e.reason, regarding: e.regarding }, 'cannot record event');
    }
  };

  return {
    record(e) {
      const r = e.regarding;
      const key = [r.kind, r.namespace ?? '', r.name, e.type, e.reason, e.note].join('\0');
      const now = Date.now();
      const last = lastSent.get(key);
      if (last !== undefined && now - last < windowMs) return;
      lastSent.delete(key);
      lastSent.set(key, now);
      // Forget the oldest entries (Map keeps insertion order) so the memory stays bounded.
      while (lastSent.size > MAX_REMEMBERED) {
        const oldest = lastSent.keys().next();
        if (oldest.done === true) break;
        lastSent.delete(oldest.value);
      }
      const p = send(e).finally(() => inFlight.delete(p));
      inFlight.add(p);
    },
    async flush() {
      await Promise.all([...inFlight]);
    },
  };
}
