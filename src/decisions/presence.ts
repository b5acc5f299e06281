import type { Store } from '../storage/gateway.js';

/**
 * Whether a store holds any decision at all, so that statistics and lists pay nothing for
 * suppression while none was ever made (every extra table a statement reads costs the embedded
 * engine milliseconds to plan, as much as a small statistic itself).
 *
 * Embedded, one process owns the data folder and makes every decision through this module: the
 * answer, read once from the store, stays exact. A ClickHouse server is shared by processes that
 * cannot see each other's writes here, so there the answer is always "maybe" and the predicate is
 * always applied. Decisions are never deleted: once present, always present.
 */

const present = new Map<string, Promise<boolean> | true>();
const keyOf = (store: Store) => `${store.mode}:${store.database}`;

export function decisionsMayExist(store: Store): Promise<boolean> | boolean {
  if (store.mode !== 'embedded') return true;
  const key = keyOf(store);
  const known = present.get(key);
  if (known !== undefined) return known;
  const read = store
    .query<{ n: number }>('SELECT count() AS n FROM finding_decisions')
    .then(([row]) => (row?.n ?? 0) > 0)
    .catch((err: unknown) => {
      present.delete(key); // ask again next time
      throw err;
    });
  present.set(key, read);
  return read;
}

/** Called after a decision is stored: from now on statements apply the suppression predicate. */
export function markDecisionsExist(store: Store): void {
  present.set(keyOf(store), true);
}
