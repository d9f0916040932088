/** An event waiting to be sent, keyed by its canonical body. */
export interface Keyed {
  readonly body: string;
}

/**
 * The forwarder's FIFO of events waiting to be sent, with an index of their bodies so an
 * identical event can be merged in O(1). The event in flight is not in here: a change after
 * it was sent needs a new event.
 */
export class PendingEvents<T extends Keyed> {
  private readonly items: T[] = [];
  private readonly bodies = new Set<string>();

  /** Events waiting. */
  get length(): number {
    return this.items.length;
  }

  /** Whether an identical event is waiting. */
  has(body: string): boolean {
    return this.bodies.has(body);
  }

  /** Appends (new events). */
  push(item: T): void {
    this.items.push(item);
    this.bodies.add(item.body);
  }

  /** Puts back at the head (an event to retry keeps its place in line). */
  pushFront(item: T): void {
    this.items.unshift(item);
    this.bodies.add(item.body);
  }

  /** Takes the head. */
  shift(): T | undefined {
    const item = this.items.shift();
    if (item !== undefined) this.bodies.delete(item.body);
    return item;
  }

  /** Takes everything. */
  drain(): T[] {
    this.bodies.clear();
    return this.items.splice(0);
  }
}
