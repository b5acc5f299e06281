import { randomUUID } from 'node:crypto';
import type { Store } from '../storage/gateway.js';
import { copiedAsFile, holdsRows, type StoredTable } from './manifest.js';

/**
 * The part of a snapshot that must see one instant (SPEC §14), kept as short as the engine
 * allows: with writers held at the commit gate, each table holding rows is cloned into a scratch
 * database. A MergeTree table's clone shares its data parts (`ATTACH PARTITION ALL FROM` links the
 * source's immutable parts; no row is read or written), so its cost does not grow with the rows;
 * an EmbeddedRocksDB table has no parts to share and is copied into a MergeTree table (its rows
 * are the size of the findings, not of the history). Everything slow — checksums, the engine's
 * BACKUP, verification — then reads the clones with the writers running again.
 */

/** A scratch database holding the frozen copies of a database's tables. */
export interface Frozen {
  /** The scratch database. */
  database: string;
  /** The source database. */
  source: string;
  /** The source's tables (rowless ones are not cloned: BACKUP takes their definitions from the source). */
  tables: StoredTable[];
}

/** A name for a scratch database next to `database` (the engine's names: letters, digits, underscores). */
export const scratchName = (database: string, purpose: string) => `${database}_${purpose}_${randomUUID().replace(/-/g, '').slice(0, 12)}`;

/** Clones `tables` of the store's database into a new scratch database; call it with writers held. */
export async function freeze(store: Store, tables: StoredTable[]): Promise<Frozen> {
  const source = store.database;
  const database = scratchName(source, 'frozen');
  await store.command(`CREATE DATABASE ${database}`);
  try {
    for (const t of tables.filter(holdsRows)) {
      if (copiedAsFile(t)) {
        await store.command(
          `CREATE TABLE ${database}.${t.name} ENGINE = MergeTree ORDER BY tuple() AS SELECT * FROM ${source}.${t.name}`,
          undefined,
          {
            timeoutMs: 0,
          },
        );
      } else {
        await store.command(`CREATE TABLE ${database}.${t.name} AS ${source}.${t.name}`);
        await store.command(`ALTER TABLE ${database}.${t.name} ATTACH PARTITION ALL FROM ${source}.${t.name}`, undefined, { timeoutMs: 0 });
      }
    }
  } catch (err) {
    await thaw(store, { database, source, tables });
    throw err;
  }
  return { database, source, tables };
}

/** Drops the scratch database of `freeze` (its parts stay with the source tables that share them). */
export async function thaw(store: Store, frozen: Frozen): Promise<void> {
  await store.command(`DROP DATABASE IF EXISTS ${frozen.database} SYNC`, undefined, { timeoutMs: 0 });
}

/**
 * The BACKUP's table list: each frozen clone under its source's name, and the definitions of the
 * tables without rows (views, the Null tables) and of the key-value tables (their rows travel apart:
 * `copies` names the clone's name in the backup, or nothing when they travel as files).
 */
export function backupList(frozen: Frozen, copies?: (t: StoredTable) => string): string {
  const { database, source } = frozen;
  const items: string[] = [];
  for (const t of frozen.tables) {
    if (!holdsRows(t)) items.push(`TABLE ${source}.${t.name}`);
    else if (!copiedAsFile(t)) items.push(`TABLE ${database}.${t.name} AS ${source}.${t.name}`);
    else {
      items.push(`TABLE ${source}.${t.name}`);
      if (copies) items.push(`TABLE ${database}.${t.name} AS ${source}.${copies(t)}`);
    }
  }
  return items.join(', ');
}
