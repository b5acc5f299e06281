import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The process's gate over changes to the store: writers (an ingest batch from its first write to
 * its totals, any other statement that changes data) pass it side by side; a snapshot closes it
 * (SPEC §14) and waits for the writers inside, so that each batch is wholly in a snapshot or wholly
 * out. Writers arriving while it is closed wait until it opens again. Work started inside a pass
 * or inside the closure passes again at once (a batch's own statements, the snapshot's), so
 * nesting never waits for itself.
 */
export class CommitGate {
  private inside = 0;
  private closed: Promise<void> | undefined;
  private drained: (() => void) | undefined;
  /** The pass or closure the running code is inside; it ends with its work (timers it set do not inherit it). */
  private readonly holder = new AsyncLocalStorage<{ live: boolean }>();

  /** Runs `work` as a writer: it waits while a snapshot holds the gate. */
  async pass<T>(work: () => Promise<T>): Promise<T> {
    if (this.nested) return work();
    while (this.closed) await this.closed;
    this.inside += 1;
    const token = { live: true };
    try {
      return await this.holder.run(token, work);
    } finally {
      token.live = false;
      this.inside -= 1;
      if (this.inside === 0) this.drained?.();
    }
  }

  /** Runs `work` with no writer inside and none let in (one closure at a time). */
  async close<T>(work: () => Promise<T>): Promise<T> {
    while (this.closed) await this.closed;
    let open!: () => void;
    this.closed = new Promise<void>((resolve) => (open = resolve));
    const token = { live: true };
    try {
      if (this.inside > 0) await new Promise<void>((resolve) => (this.drained = resolve));
      this.drained = undefined;
      return await this.holder.run(token, work);
    } finally {
      token.live = false;
      this.closed = undefined;
      open();
    }
  }

  /** Whether the running code is inside a pass or the closure (its writes pass at once). */
  protected get nested(): boolean {
    return this.holder.getStore()?.live === true;
  }

  /** Whether a snapshot holds the gate now. */
  get isClosed(): boolean {
    return this.closed !== undefined;
  }
}
