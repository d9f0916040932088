import type { BootstrapperState } from '../../api/runtime-bootstrapper.js';

/**
 * Since when each runtime has been not Ready, as seen by this process (a state has no time of its
 * own in the status, and conditions that say nothing about readiness may have moved long ago).
 * Paused runtimes are an operator's choice and are not counted.
 */
export class NotReadyClock {
  private readonly since = new Map<string, number>();

  /** Takes the runtimes' states at `nowMs`; returns the earliest not-Ready-since (epoch ms), if any. */
  observe(
    runtimes: Iterable<{ readonly key: string; readonly state: BootstrapperState }>,
    nowMs: number,
  ): number | undefined {
    const seen = new Set<string>();
    let earliest: number | undefined;
    for (const r of runtimes) {
      if (r.state === 'Ready' || r.state === 'Paused') continue;
      seen.add(r.key);
      let since = this.since.get(r.key);
      if (since === undefined) {
        since = nowMs;
        this.since.set(r.key, since);
      }
      if (earliest === undefined || since < earliest) earliest = since;
    }
    for (const key of this.since.keys()) if (!seen.has(key)) this.since.delete(key);
    return earliest;
  }
}
