import { Suppression } from '../../src/decisions/suppression.js';
import { TotalsRewriter } from '../../src/ingest/totals.js';
import { ProcessLocks } from '../../src/locks/target-locks.js';
import type { Logger } from '../../src/log.js';
import type { Store } from '../../src/storage/gateway.js';
import { silentLogger } from '../../src/log.js';

/** What a batcher or the database API needs to write into a store this process owns alone: its locks, its one rewriter of the totals and what it knows of decisions. */
export function ownedStore(
  store: Store,
  log: Logger = silentLogger,
): { locks: ProcessLocks; totals: TotalsRewriter; suppression: Suppression } {
  const locks = new ProcessLocks();
  return { locks, totals: new TotalsRewriter(store, locks, log), suppression: new Suppression(store) };
}
