import { Suppression } from '../../src/decisions/suppression.js';
import { TotalsRewriter } from '../../src/ingest/totals.js';
import { ProcessLocks } from '../../src/locks/target-locks.js';
import type { Logger } from '../../src/log.js';
import type { Store } from '../../src/storage/gateway.js';

/**
 * What a batcher or the database API needs to write into a store the benchmark owns alone: its
 * locks, its one rewriter of the totals and what it knows of decisions, whose tables left by a
 * killed run are dropped first, as the service does at start (src/service.ts).
 */
export async function ownedStore(
  store: Store,
  log: Logger,
): Promise<{ locks: ProcessLocks; totals: TotalsRewriter; suppression: Suppression }> {
  const locks = new ProcessLocks();
  const suppression = new Suppression(store);
  await suppression.dropLeftovers();
  return { locks, totals: new TotalsRewriter(store, locks, log), suppression };
}
