import type { Logger } from '../log.js';
import type { Store } from '../storage/gateway.js';
import { NIL_UUID } from '../domain/uuid.js';
import { acquireAll, LockTimeout, type Locks } from '../locks/target-locks.js';

/**
 * The write side of the findings lists' totals (the lists without filters, or filtered by status
 * only), per scope: 'all' or 'team:<id>'. finding_totals (sql/0012) sums the counters' changes as they are written;
 * finding_total_values (sql/0014) holds the sums by key for pages to join, and is rewritten from
 * finding_totals after every change, by one writer at a time (a lock in the target locks'
 * namespace): a rewrite that read the sums before another writer's change can then never land
 * after that writer's own rewrite.
 */

/** Never a target's id (those are UUIDv5): the lock that serialises rewrites of the totals. */
const TOTALS_LOCK = NIL_UUID;

/**
 * One rewrite under the lock. Without Redis no lock can be taken, but no batch can start either
 * (batches take their target locks there too): the rewrite goes ahead, as POST /targets does.
 */
export async function rewriteTotals(store: Store, locks: Locks, log?: Logger): Promise<void> {
  const held = await acquireAll(locks, [TOTALS_LOCK]).catch((err: unknown) => {
    if (err instanceof LockTimeout) throw err;
    log?.warn('totals lock unavailable; rewriting the totals without it', { err });
    return undefined;
  });
  try {
    await store.command(
      `INSERT INTO finding_total_values
       SELECT scope, toUInt64(sum(open)), toUInt64(sum(fixed)) FROM finding_totals GROUP BY scope`,
    );
  } finally {
    await held?.release().catch(() => undefined);
  }
}

/**
 * Rewrites the totals after changes. Requests made while a rewrite runs are served by one more
 * rewrite after it (which sees their changes); a failed rewrite is retried in the background until
 * one succeeds, so the values never stay behind a committed change.
 */
export class TotalsRewriter {
  private running: Promise<void> | undefined;
  private again: Promise<void> | undefined;
  private retry: NodeJS.Timeout | undefined;
  private failing = false;

  constructor(
    private readonly store: Store,
    private readonly locks: Locks,
    private readonly log: Logger,
    private readonly retryMs = 1000,
  ) {}

  /** Resolves once a rewrite that started after this call has finished (or failed and is retried). */
  request(): Promise<void> {
    if (!this.running) return (this.running = this.run());
    this.again ??= this.running.then(() => {
      this.again = undefined;
      return this.request();
    });
    return this.again;
  }

  private async run(): Promise<void> {
    try {
      await rewriteTotals(this.store, this.locks, this.log);
      clearTimeout(this.retry);
      if (this.failing) this.log.info('findings totals rewritten again');
      this.failing = false;
    } catch (err) {
      if (!this.failing) this.log.warn('rewriting the findings totals failed; retrying every second', { err });
      this.failing = true;
      clearTimeout(this.retry);
      this.retry = setTimeout(() => void this.request(), this.retryMs);
      this.retry.unref();
    } finally {
      this.running = undefined;
    }
  }

  close(): void {
    clearTimeout(this.retry);
  }
}
