import type { Logger } from '../log.js';
import { ProcessLocks } from '../locks/target-locks.js';
import { rewriteTotals } from '../ingest/totals.js';
import type { Store } from '../storage/gateway.js';
import { migrate } from '../storage/migrate.js';
import { differences, holdsRows, readManifest, SnapshotError, snapshotTables, tableSums, type Manifest } from './manifest.js';
import { restoreInto } from './snapshot.js';

/**
 * `vulndb restore <dir>` (SPEC §14): fills an empty store from a snapshot while the service is
 * stopped (an embedded data folder belongs to one process: a running service keeps the CLI out),
 * checks every table against the manifest, then applies the migrations that came after the
 * snapshot's schema version and rewrites the findings lists' totals from their counters (a
 * snapshot may fall between a change and its rewrite).
 */

/** The store already holds data: a restore never mixes a snapshot with it. */
export class StoreNotEmpty extends Error {
  constructor(database: string, tables: string[]) {
    super(
      `the store (database ${database}) holds data (${tables.slice(0, 3).join(', ')}${tables.length > 3 ? ', …' : ''}): restore fills an empty store only`,
    );
    this.name = 'StoreNotEmpty';
  }
}

export interface RestoreProgress {
  phase: 'restore' | 'verify' | 'migrate';
  done: number;
  of: number;
}

export interface RestoreResult {
  manifest: Manifest;
  /** Migrations applied after the snapshot's data was in place. */
  migrations: number[];
}

/** Refuses a store holding rows; drops the empty tables a started service may have created. */
export async function emptyOrRefuse(store: Store): Promise<void> {
  const tables = await snapshotTables(store, store.database);
  const sums = await tableSums(store, store.database, tables);
  // The ledger of a service started once on the empty folder is not data.
  const holding = sums.filter((t) => t.rows > 0 && t.name !== 'schema_migrations').map((t) => t.name);
  if (holding.length > 0) throw new StoreNotEmpty(store.database, holding);
  // Views first: a table some view reads cannot go before it.
  const order = [...tables.filter((t) => !holdsRows(t)), ...tables.filter(holdsRows)];
  for (const t of order) await store.command(`DROP TABLE IF EXISTS ${store.database}.${t.name} SYNC`);
}

export async function restoreSnapshot(
  store: Store,
  dir: string,
  log: Logger,
  onProgress: (p: RestoreProgress) => void = () => {},
): Promise<RestoreResult> {
  const manifest = readManifest(dir);
  await emptyOrRefuse(store);
  onProgress({ phase: 'restore', done: 0, of: 1 });
  const tables = manifest.tables.map(({ name, engine }) => ({ name, engine }));
  await restoreInto(store, dir, manifest.database, store.database, tables);
  onProgress({ phase: 'restore', done: 1, of: 1 });
  const migrations = await checkAndMigrate(store, manifest, log, onProgress);
  log.info('snapshot restored', { dir, schemaVersion: manifest.schema_version, migrations, sources: manifest.sources });
  return { manifest, migrations };
}

/**
 * After the snapshot's data is in place: every table checked against the manifest, then the
 * migrations newer than the snapshot and the findings lists' totals rewritten from their counters
 * (a snapshot may fall between a change and its rewrite). Resolves to the migrations applied.
 */
export async function checkAndMigrate(
  store: Store,
  manifest: Manifest,
  log: Logger,
  onProgress: (p: RestoreProgress) => void,
): Promise<number[]> {
  const restored = await snapshotTables(store, store.database);
  const sums = await tableSums(store, store.database, restored, (done, of) => onProgress({ phase: 'verify', done, of }));
  const wrong = differences(manifest.tables, sums);
  if (wrong.length > 0) throw new SnapshotError(`the restored store differs from the snapshot: ${wrong.join('; ')}`);
  onProgress({ phase: 'migrate', done: 0, of: 1 });
  const migrations = await migrate(store, log);
  await rewriteTotals(store, new ProcessLocks(), log);
  onProgress({ phase: 'migrate', done: 1, of: 1 });
  return migrations;
}
