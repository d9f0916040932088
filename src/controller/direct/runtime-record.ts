/**
 * What the reconciler keeps of one runtime (one RuntimeBootstrapper key) between its passes, in
 * memory only: a restart, or a runtime handed to another replica, starts from nothing known.
 */
import { SetLedger } from './set-writes.js';

/** Everything this process remembers of one runtime between passes. */
export class RuntimeRecord {
  /** The next pass re-applies everything (periodic resync, drift repair); kept until one succeeds. */
  forced = false;
  /** Until when (epoch ms) a pass of this process found the serving certificate current. */
  servingCurrentUntil: number | undefined;
  /** notAfter (epoch ms) of the drift client certificate the last good pass left on the runtime. */
  driftNotAfter: number | undefined;
  /** When (epoch ms) this process last read the runtime's workloads, to bound the reads. */
  workloadsLookedAt: number | undefined;
  /** What this process's passes wrote of the set, per API server its kubeconfig named (./set-writes.ts). */
  readonly written = new SetLedger();

  /**
   * Another replica may write to the runtime now: what this one wrote there, and the drift
   * certificate it left, are no longer known to be there.
   */
  handedOver(): void {
    this.written.clear();
    this.driftNotAfter = undefined;
  }
}

/** The records of every runtime, by key; {@link RuntimeRecords.forget} drops all of one. */
export class RuntimeRecords {
  private readonly records = new Map<string, RuntimeRecord>();

  /** The record of `key`, made empty when there is none. */
  of(key: string): RuntimeRecord {
    let record = this.records.get(key);
    if (record === undefined) {
      record = new RuntimeRecord();
      this.records.set(key, record);
    }
    return record;
  }

  /** The record of `key`, if this process keeps one. */
  peek(key: string): RuntimeRecord | undefined {
    return this.records.get(key);
  }

  /** Drops everything kept of `key` (its CR is gone): a CR made again under that key starts fresh. */
  forget(key: string): void {
    this.records.delete(key);
  }

  /** Runtimes with a record (tests). */
  get size(): number {
    return this.records.size;
  }
}
