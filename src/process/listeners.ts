/**
 * Listeners of one kind of event, registered by whoever listens once it exists: how a part
 * built first tells parts built after it, without a callback connected to it later.
 */
export class Listeners<A extends unknown[]> {
  private readonly list = new Set<(...args: A) => void>();

  /** Adds a listener; returns its removal. */
  add(listener: (...args: A) => void): () => void {
    this.list.add(listener);
    return () => {
      this.list.delete(listener);
    };
  }

  /** Tells every listener, in the order they were added. */
  emit(...args: A): void {
    for (const listener of this.list) listener(...args);
  }
}
