import { randomUUID } from 'node:crypto';
import type { Store } from '../storage/gateway.js';
import { copiedAsFile, holdsRows, type StoredTable } from './manifest.js';

/**
 * The part of a snapshot that must see one instant (SPEC §14), kept as short as the engine
 * allows: with writers held at the commit gate, each table holding rows is cloned into a scratch
 * database. A MergeTree table's clone shares its data parts (`ATTACH PARTITION ALL FROM` links the
 * source's immutable parts; no row is read or written), so its cost does not grow with the rows;
 * an EmbeddedRocksDB table has no parts to share: the small ones are copied into a MergeTree table
 * under the gate, the large one (each finding's latest event) is rebuilt from its cloned source
 * after it (`derive`). Everything slow — checksums, the engine's BACKUP, verification — then reads
 * the clones with the writers running again. The clones are created before the gate closes, so
 * that only their filling holds it.
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

/**
 * Creates the scratch database and an empty clone of each table holding rows (outside the gate:
 * the definitions do not change while the service runs); `capture` then fills them.
 */
export async function prepareFreeze(store: Store, tables: StoredTable[]): Promise<Frozen> {
  const source = store.database;
  const frozen = { database: scratchName(source, 'frozen'), source, tables };
  await store.command(`CREATE DATABASE ${frozen.database}`);
  try {
    for (const t of tables.filter(holdsRows)) {
      await store.command(
        copiedAsFile(t)
          ? `CREATE TABLE ${frozen.database}.${t.name} ENGINE = MergeTree ORDER BY tuple() EMPTY AS SELECT * FROM ${source}.${t.name}`
          : `CREATE TABLE ${frozen.database}.${t.name} AS ${source}.${t.name}`,
      );
    }
  } catch (err) {
    await thaw(store, frozen);
    throw err;
  }
  return frozen;
}

/**
 * Key-value tables whose rows follow from a MergeTree table's, rebuilt from its clone after the
 * gate opens instead of copied under it: each finding's latest FOUND event is the argMax of its
 * events, as sql/0012's backfill and `vulndb recompute` (src/ingest/recompute-queries.ts) derive
 * it. Copying it under the gate read every finding's event (about 0.5 to 1 s per 100,000 findings
 * on a loaded two-core host); rebuilding it costs more, but no writer waits for it.
 */
const DERIVED: Record<string, { from: string; select: (from: string) => string }> = {
  finding_latest_events: {
    from: 'finding_events',
    select: (from) => `SELECT finding_id, e.1, e.2, e.3, e.4, e.5, e.6, e.7, e.8, e.9, e.10, e.11
      FROM
      (
          SELECT finding_id,
                 argMax((time, check_id, pos, source_id, toString(source_name), toString(component), toString(options), details,
                         impact_details, resources, affected_resource_string), (time, check_id, pos)) AS e
          FROM ${from}
          GROUP BY finding_id
      )`,
  },
};

/** A key-value table `derive` rebuilds (its source table is cloned too). */
const derived = (frozen: Frozen, t: StoredTable) =>
  copiedAsFile(t) && t.name in DERIVED && frozen.tables.some((s) => s.name === DERIVED[t.name]!.from && holdsRows(s) && !copiedAsFile(s));

/** Fills the clones of `prepareFreeze` with the tables' rows of this instant: call it with writers held. */
export async function capture(store: Store, frozen: Frozen): Promise<void> {
  const { database, source } = frozen;
  for (const t of frozen.tables.filter((t) => holdsRows(t) && !derived(frozen, t))) {
    await store.command(
      copiedAsFile(t)
        ? `INSERT INTO ${database}.${t.name} SELECT * FROM ${source}.${t.name}`
        : `ALTER TABLE ${database}.${t.name} ATTACH PARTITION ALL FROM ${source}.${t.name}`,
      undefined,
      { timeoutMs: 0 },
    );
  }
}

/** After `capture`, writers running: the derived key-value tables' clones rebuilt from their sources' clones. */
export async function derive(store: Store, frozen: Frozen): Promise<void> {
  for (const t of frozen.tables.filter((t) => derived(frozen, t))) {
    const { from, select } = DERIVED[t.name]!;
    await store.command(`INSERT INTO ${frozen.database}.${t.name} ${select(`${frozen.database}.${from}`)}`, undefined, { timeoutMs: 0 });
  }
}

/** Drops the scratch database of `prepareFreeze` (its parts stay with the source tables that share them). */
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
