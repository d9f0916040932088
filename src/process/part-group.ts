import type { Logger } from 'pino';

/**
 * One part of a process (controller-runtime's runnable): started after the parts it needs,
 * stopped before them.
 */
export interface Part {
  /** Names the part in logs and errors. */
  readonly name: string;
  /** Parts that must have started before this one, and stop only after it. */
  readonly needs?: readonly Part[];
  start(): Promise<void> | void;
  stop(): Promise<void> | void;
}

/** A part could not start; the parts started before it were stopped again. */
export class PartStartError extends Error {
  constructor(
    readonly part: string,
    cause: unknown,
  ) {
    super(`${part}: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'PartStartError';
  }
}

/** The parts' needs form a loop, or name a part the group does not hold: a wiring error. */
export class PartWiringError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PartWiringError';
  }
}

/**
 * Parts started in dependency order (insertion order where needs allow) and stopped in reverse:
 * one mechanism for every process, and itself a part, so a group can run inside another (e.g.
 * the parts that run only while this replica leads). A start that fails stops what it started
 * and rejects with {@link PartStartError}; stopping logs a part that fails and goes on.
 */
export class PartGroup implements Part {
  private readonly parts: Part[] = [];
  private started: Part[] = [];

  constructor(
    readonly name: string,
    private readonly logger: Logger,
    readonly needs: readonly Part[] = [],
  ) {}

  /** Adds a part and returns it, so the next part can name it in its needs. */
  add<P extends Part>(part: P): P {
    this.parts.push(part);
    return part;
  }

  /** Starts every part, each after its needs. */
  async start(): Promise<void> {
    const order = this.order();
    for (const part of order) {
      try {
        await part.start();
      } catch (cause) {
        await this.stop();
        throw new PartStartError(part.name, cause);
      }
      this.started.push(part);
    }
  }

  /** Stops the started parts, last started first; a second call stops nothing. */
  async stop(): Promise<void> {
    for (const part of this.started.splice(0).reverse()) {
      try {
        await part.stop();
      } catch (error) {
        this.logger.warn({ err: error, part: part.name, group: this.name }, 'stopping a part failed');
      }
    }
  }

  /**
   * The parts in the order {@link start} starts them (stopped in reverse), without starting any:
   * the wiring can be read, and tested, without I/O. Throws {@link PartWiringError} as start would.
   */
  plan(): readonly Part[] {
    return this.order();
  }

  /** Whether every part has started (and none stopped since). */
  running(): boolean {
    return this.parts.length === this.started.length && this.parts.length > 0;
  }

  /** Depth-first over the needs in insertion order: the order a reader of the wiring expects. */
  private order(): Part[] {
    const member = new Set<Part>(this.parts);
    const done = new Set<Part>();
    const visiting = new Set<Part>();
    const order: Part[] = [];
    const visit = (part: Part, path: readonly string[]): void => {
      if (done.has(part)) return;
      if (visiting.has(part))
        throw new PartWiringError(`${this.name}: parts need each other: ${[...path, part.name].join(' → ')}`);
      visiting.add(part);
      for (const need of part.needs ?? []) {
        // A need outside the group is one the group itself needs (started before the group).
        if (!member.has(need) && !this.needs.includes(need))
          throw new PartWiringError(
            `${this.name}: ${part.name} needs ${need.name}, which is not in the group`,
          );
        if (member.has(need)) visit(need, [...path, part.name]);
      }
      visiting.delete(part);
      done.add(part);
      order.push(part);
    };
    for (const part of this.parts) visit(part, []);
    return order;
  }
}

/** A part from two functions: what most parts are. */
export function part(
  name: string,
  run: { start?: () => Promise<void> | void; stop?: () => Promise<void> | void; needs?: readonly Part[] },
): Part {
  return {
    name,
    needs: run.needs ?? [],
    start: run.start ?? (() => undefined),
    stop: run.stop ?? (() => undefined),
  };
}

/** What starts and stops: most parts are objects with these two methods. */
export interface Lifecycle {
  start(): Promise<void> | void;
  stop(): Promise<void> | void;
}

/**
 * A part that starts and stops `target`; one that is off (undefined) is a part that does nothing,
 * so the others can still name it in their needs.
 */
export function partOf(name: string, target: Lifecycle | undefined, needs: readonly Part[] = []): Part {
  return part(name, {
    needs,
    start: async () => {
      await target?.start();
    },
    stop: async () => {
      await target?.stop();
    },
  });
}
