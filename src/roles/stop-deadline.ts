import { within } from '../domain/deadline.js';
import type { Logger } from '../log.js';

/**
 * The time a stopping process has left (SPEC §3.7, SHUTDOWN_TIMEOUT_MS). Every step of a stop is
 * awaited only while time is left: Redis or the store not answering must not keep the process
 * alive. A step abandoned is not lost work: jobs not committed stay in Redis, held under a lock
 * that lapses, and are taken again by another worker.
 */
export class StopDeadline {
  private readonly at: number;

  constructor(
    ms: number,
    private readonly log: Logger,
  ) {
    this.at = Date.now() + ms;
  }

  left(): number {
    return Math.max(0, this.at - Date.now());
  }

  /** Awaits `step` while time is left: true when it settled in time (a failure is logged), false when abandoned. */
  async bound(what: string, step: Promise<unknown>): Promise<boolean> {
    const settled = step.then(
      () => true,
      (err: unknown) => {
        this.log.warn(`stopping: ${what} failed`, { err });
        return true;
      },
    );
    const done = await within(settled, this.left(), () => false);
    if (!done) this.log.warn(`stopping: ${what} did not finish in time; going on without it`);
    return done;
  }
}
