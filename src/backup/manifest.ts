import fs from 'node:fs';
import path from 'node:path';
import { z } from 'zod';
import type { Store } from '../storage/gateway.js';

/**
 * A snapshot's folder (SPEC §14): `store/`, the engine's BACKUP of the database (every table's
 * definition, MergeTree data); `tables/<name>.native`, the rows of the key-value tables whose data
 * the engine's BACKUP leaves out (EmbeddedRocksDB: it copies their definition only); and
 * `manifest.json`, written last, so that a folder without it is an unfinished snapshot.
 */

export const MANIFEST_FILE = 'manifest.json';
export const STORE_DIR = 'store';
export const TABLES_DIR = 'tables';

/** Engines whose rows BACKUP does not copy: they travel as Native files instead. */
const COPIED_ENGINES: ReadonlySet<string> = new Set(['EmbeddedRocksDB']);
/** Engines that hold no rows of their own (definitions only). */
const ROWLESS_ENGINES: ReadonlySet<string> = new Set(['View', 'MaterializedView', 'Null']);

const tableSum = z.object({ name: z.string(), engine: z.string(), rows: z.number().int().nonnegative(), checksum: z.string() });
export type TableSum = z.infer<typeof tableSum>;

export const manifestSchema = z.object({
  format: z.literal(1),
  created_at: z.string(),
  database: z.string().regex(/^[A-Za-z_][A-Za-z0-9_]*$/),
  schema_version: z.number().int().nonnegative(),
  engine_version: z.string(),
  /** Reports stored at the snapshot instant (rows of `sources`). */
  sources: z.number().int().nonnegative(),
  tables: z.array(tableSum),
  bytes: z.number().int().nonnegative(),
  /** How long writers waited at the commit gate for this snapshot's instant (ms). */
  pause_ms: z.number().int().nonnegative().optional(),
});
export type Manifest = z.infer<typeof manifestSchema>;

/** A snapshot that cannot be read, or whose copy differs from what it records. */
export class SnapshotError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'SnapshotError';
  }
}

export interface StoredTable {
  name: string;
  engine: string;
}

/**
 * The tables of a database a snapshot holds: all but scratch tables (Memory and Set engines; earlier
 * versions kept suppressed findings in such tables, and a data folder may still hold some).
 */
export const snapshotTables = (store: Store, database: string) =>
  store.query<StoredTable>(
    `SELECT name, engine FROM system.tables
     WHERE database = {db:String} AND engine NOT IN ('Memory', 'Set') ORDER BY name`,
    { db: database },
  );

export const holdsRows = (t: StoredTable) => !ROWLESS_ENGINES.has(t.engine);
export const copiedAsFile = (t: StoredTable) => COPIED_ENGINES.has(t.engine);

/**
 * Tables whose rows background merges rewrite (a replacing table's versions collapse, a summing
 * table's rows add up): read FINAL, they give the same rows however far merges went.
 */
const mergesRows = (t: StoredTable) => t.engine.endsWith('MergeTree') && !/^(Replicated)?MergeTree$/.test(t.engine);

/**
 * Rows and an order-independent checksum (the wrapping sum of the rows' hashes) of each table
 * holding rows, as merged (FINAL) where merges change rows: the same data gives the same sums
 * wherever and whenever it is read.
 */
export async function tableSums(
  store: Store,
  database: string,
  tables: StoredTable[],
  onTable?: (done: number, of: number) => void,
): Promise<TableSum[]> {
  const counted = tables.filter(holdsRows);
  const sums: TableSum[] = [];
  for (const t of counted) {
    const [row] = await store.query<{ rows: number; checksum: string }>(
      `SELECT count() AS rows, hex(sum(cityHash64(formatRowNoNewline('TabSeparated', *)))) AS checksum FROM {db:Identifier}.{t:Identifier}${mergesRows(t) ? ' FINAL' : ''}`,
      { db: database, t: t.name },
      { timeoutMs: 0 },
    );
    sums.push({ name: t.name, engine: t.engine, rows: row!.rows, checksum: row!.checksum });
    onTable?.(sums.length, counted.length);
  }
  return sums;
}

/** The tables whose sums differ between `expected` and `actual`, described for a person. */
export function differences(expected: TableSum[], actual: TableSum[]): string[] {
  const byName = new Map(actual.map((t) => [t.name, t]));
  const out: string[] = [];
  for (const e of expected) {
    const a = byName.get(e.name);
    if (!a) out.push(`${e.name}: missing`);
    else if (a.rows !== e.rows || a.checksum !== e.checksum)
      out.push(`${e.name}: ${a.rows} rows (${a.checksum}), expected ${e.rows} (${e.checksum})`);
  }
  return out;
}

/** The tables of `expected` (views and definitions included) that `actual` lacks, described for a person. */
export function missingTables(expected: StoredTable[], actual: StoredTable[]): string[] {
  const names = new Set(actual.map((t) => t.name));
  return expected.filter((t) => !names.has(t.name)).map((t) => `${t.name} (${t.engine}): missing`);
}

export function writeManifest(dir: string, manifest: Manifest): void {
  fs.writeFileSync(path.join(dir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`);
}

export function readManifest(dir: string): Manifest {
  const file = path.join(dir, MANIFEST_FILE);
  let text: string;
  try {
    text = fs.readFileSync(file, 'utf8');
  } catch {
    throw new SnapshotError(`${dir} is not a vulndb snapshot: ${MANIFEST_FILE} is missing (an unfinished or foreign folder)`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    throw new SnapshotError(`${file} is not JSON`);
  }
  const parsed = manifestSchema.safeParse(json);
  if (!parsed.success)
    throw new SnapshotError(`${file} is not a vulndb snapshot manifest: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}

/** Bytes of the files under `dir`. */
export function folderBytes(dir: string): number {
  let bytes = 0;
  for (const entry of fs.readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile()) bytes += fs.statSync(path.join(entry.parentPath, entry.name)).size;
  }
  return bytes;
}

/** A File('…') or file('…') argument: SQL string literal of a path (BACKUP takes no bound parameters). */
export const sqlString = (text: string) => `'${text.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
