/** A reflector over a scripted lister-watcher, its handlers and (optionally) its logger writing to arrays. */
import { Reflector } from '../../../src/kube/reflector.js';
import type { ReflectorOptions } from '../../../src/kube/reflector-options.js';
import type { ScriptedListerWatcher, Obj } from './scripted-lister-watcher.js';

/** One line the harness's logger received. */
export interface LogEntry {
  level: 'debug' | 'warn';
  msg: string;
  delayMs?: number;
}

/** What differs between the reflector tests. */
export interface HarnessSetup {
  /** The list's page size (0: unpaged). */
  readonly pageSize: number;
  /** Give the reflector a logger that records into `logs`; otherwise it has none. */
  readonly logs?: boolean;
  /** A delete the reflector found by a relist reads `delete <name> (relist)`; otherwise `delete <name>`. */
  readonly markRelistDeletes?: boolean;
}

/**
 * A reflector over `lw` with fast backoff (unless `extra` overrides) whose handlers log to
 * `events`: `add <name>@<rv>`, `update <name> <rv>-><rv>`, `delete <name>`.
 */
export function reflectorHarness(
  lw: ScriptedListerWatcher<Obj>,
  setup: HarnessSetup,
  extra: Partial<ReflectorOptions<Obj>> = {},
) {
  const events: string[] = [];
  const logs: LogEntry[] = [];
  const reflector = new Reflector<Obj>({
    name: 'test',
    listerWatcher: lw,
    pageSize: setup.pageSize,
    // Scripted lists report no sizes: pages of `pageSize` from the first (byte budgets: pager.test.ts).
    pageBytes: Infinity,
    watchTimeoutSeconds: { min: 5, max: 10 },
    backoff: { baseMs: 5, maxMs: 40, factor: 2, jitter: 0 },
    minHealthyWatchMs: 60_000,
    handlers: {
      onAdd: (o) => events.push(`add ${o.metadata.name}@${o.metadata.resourceVersion}`),
      onUpdate: (a, b) =>
        events.push(`update ${b.metadata.name} ${a.metadata.resourceVersion}->${b.metadata.resourceVersion}`),
      onDelete: (o, unknown) =>
        events.push(
          `delete ${o.metadata.name}${setup.markRelistDeletes === true && unknown ? ' (relist)' : ''}`,
        ),
    },
    ...(setup.logs === true
      ? {
          logger: {
            debug: (o: object, msg: string) =>
              logs.push({ level: 'debug', msg, ...(o as { delayMs?: number }) }),
            warn: (o: object, msg: string) =>
              logs.push({ level: 'warn', msg, ...(o as { delayMs?: number }) }),
          },
        }
      : {}),
    ...extra,
  });
  return { reflector, events, logs };
}
