import type { Store } from '../storage/gateway.js';
import { scratchName } from './freeze.js';
import { differences, missingTables, snapshotTables, type StoredTable, type TableSum, tableSums } from './manifest.js';

/**
 * A written copy, checked the one way both modes check it: `restore` fills a scratch database from
 * it, which must hold every table of `source` and, table by table, the `recorded` rows and sums.
 * Answers what differs, described for a person (empty: verified); the scratch database is dropped
 * whatever happens.
 */
export async function differencesOfCopy(
  store: Store,
  copy: {
    source: StoredTable[];
    recorded: TableSum[];
    restore: (scratch: string) => Promise<void>;
    onTable: (done: number, of: number) => void;
  },
): Promise<string[]> {
  const scratch = scratchName(store.database, 'verify');
  await store.command(`CREATE DATABASE ${scratch}`);
  try {
    await copy.restore(scratch);
    const restored = await snapshotTables(store, scratch);
    const present = new Set(restored.map((t) => t.name));
    const sums = await tableSums(
      store,
      scratch,
      copy.source.filter((t) => present.has(t.name)),
      copy.onTable,
    );
    return [...missingTables(copy.source, restored), ...differences(copy.recorded, sums)];
  } finally {
    await store.command(`DROP DATABASE IF EXISTS ${scratch} SYNC`, undefined, { timeoutMs: 0 });
  }
}
