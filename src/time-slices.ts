/**
 * Long synchronous work on the main thread, cut into slices that give the event loop a turn.
 * The embedded engine runs one statement at a time, and only the main thread hands it the next
 * one (another batch's, or an API request's): a batch deriving 40,000 findings at a stretch
 * would leave the engine idle, and every HTTP request of the process waiting, until it is done.
 */
export class TimeSlices {
  private started = performance.now();

  constructor(private readonly budgetMs = 10) {}

  /** The current slice has used its budget: the caller should `await turn()` before going on. */
  get due(): boolean {
    return performance.now() - this.started >= this.budgetMs;
  }

  /** Lets timers and I/O callbacks run (setImmediate: after them, not before), then starts a new slice. */
  async turn(): Promise<void> {
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.started = performance.now();
  }
}
