import { TotalsRewriter } from '../../src/ingest/totals.js';
import { ProcessLocks } from '../../src/locks/target-locks.js';
import type { Logger } from '../../src/log.js';
import type { Store } from '../../src/storage/gateway.js';

/** What a batcher or the database API needs to write into a store the benchmark owns alone: its locks and its one rewriter of the totals. */
export function ownedStore(store: Store, log: Logger): { locks: ProcessLocks; totals: TotalsRewriter } {
  const locks = new ProcessLocks();
  return { locks, totals: new TotalsRewriter(store, locks, log) };
}
