import fs from 'node:fs';
import path from 'node:path';
import type { CommitGate } from '../locks/commit-gate.js';
import type { Logger } from '../log.js';
import type { Store } from '../storage/gateway.js';
import { differencesOfCopy } from './verify.js';
import { backupList, capture, derive, type Frozen, prepareFreeze, thaw } from './freeze.js';
import {
  copiedAsFile,
  folderBytes,
  type Manifest,
  MANIFEST_FILE,
  readManifest,
  SnapshotError,
  snapshotTables,
  sqlString,
  STORE_DIR,
  type StoredTable,
  TABLES_DIR,
  tableSums,
  writeManifest,
} from './manifest.js';

/**
 * `vulndb backup` in embedded mode (SPEC §14), run by the service that owns the data folder: with
 * the commit gate closed (no batch half written, no write landing) only while the tables are
 * cloned (freeze.ts), then, writers running again, it sums the clones, has the engine BACKUP them
 * under the source's names, copies the key-value tables' rows to files, verifies the copy by
 * restoring it into a scratch database and summing that, and writes the manifest last.
 */

export interface SnapshotProgress {
  phase: 'freeze' | 'sums' | 'backup' | 'copies' | 'verify';
  done: number;
  of: number;
  /** backup: bytes the engine has written so far. */
  bytes?: number;
}

export interface SnapshotDeps {
  store: Store;
  gate: CommitGate;
  log: Logger;
}

/** The folder a snapshot may be written to: absolute, and absent or empty. */
export function checkSnapshotDir(dir: string): string | undefined {
  if (!path.isAbsolute(dir)) return `the snapshot folder must be an absolute path: ${dir}`;
  if (fs.existsSync(dir) && (!fs.statSync(dir).isDirectory() || fs.readdirSync(dir).length > 0))
    return `${dir} exists and is not an empty folder: a snapshot goes to a new or empty one`;
  return undefined;
}

const fileOf = (dir: string, t: StoredTable) => path.join(dir, TABLES_DIR, `${t.name}.native`);

/** Runs the engine's BACKUP of `list` (see backupList) in the background and reports its bytes until it ends. */
async function backupStore(store: Store, list: string, dir: string, onBytes: (bytes: number) => void): Promise<void> {
  const [started] = await store.query<{ id: string }>(`BACKUP ${list} TO File(${sqlString(path.join(dir, STORE_DIR))}) ASYNC`);
  for (;;) {
    const [state] = await store.query<{ status: string; bytes: number; error: string }>(
      'SELECT toString(status) AS status, total_size AS bytes, error FROM system.backups WHERE id = {id:String}',
      { id: started!.id },
    );
    if (state) onBytes(state.bytes);
    if (state?.status === 'BACKUP_CREATED') return;
    if (state?.status !== 'CREATING_BACKUP')
      throw new SnapshotError(`the engine's BACKUP failed: ${state?.error.split('\n')[0] ?? 'lost'}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

/** Restores the snapshot under `dir` into `database` (existing and empty): the engine's part, then the copied tables. */
export async function restoreInto(store: Store, dir: string, from: string, database: string, tables: StoredTable[]): Promise<void> {
  const rename = from === database ? '' : ` AS ${database}`;
  await store.command(`RESTORE DATABASE ${from}${rename} FROM File(${sqlString(path.join(dir, STORE_DIR))})`, undefined, { timeoutMs: 0 });
  for (const t of tables.filter(copiedAsFile)) {
    await store.command(`INSERT INTO ${database}.${t.name} SELECT * FROM file(${sqlString(fileOf(dir, t))}, Native)`, undefined, {
      timeoutMs: 0,
    });
  }
}

/** The manifest of the frozen tables (its size is filled in once written): what a restore must find. */
export async function describe(store: Store, frozen: Frozen, onProgress: (p: SnapshotProgress) => void): Promise<Manifest> {
  const sums = await tableSums(store, frozen.database, frozen.tables, (done, of) => onProgress({ phase: 'sums', done, of }));
  const [facts] = await store.query<{ schema: number; sources: number; engine: string }>(
    `SELECT (SELECT max(version) FROM {db:Identifier}.schema_migrations) AS schema,
            (SELECT count() FROM {db:Identifier}.sources FINAL) AS sources, version() AS engine`,
    { db: frozen.database },
  );
  return {
    format: 1,
    created_at: new Date().toISOString(),
    database: frozen.source,
    schema_version: facts!.schema,
    engine_version: facts!.engine,
    sources: facts!.sources,
    tables: sums,
    bytes: 0,
  };
}

/** Verifies the written copy: restored into a scratch database, its sums must be the recorded ones. */
async function verify(store: Store, dir: string, manifest: Manifest, tables: StoredTable[], onProgress: (p: SnapshotProgress) => void) {
  const wrong = await differencesOfCopy(store, {
    source: tables,
    recorded: manifest.tables,
    restore: (scratch) => restoreInto(store, dir, store.database, scratch, tables),
    onTable: (done, of) => onProgress({ phase: 'verify', done, of }),
  });
  if (wrong.length > 0) throw new SnapshotError(`the snapshot differs from the store it copied: ${wrong.join('; ')}`);
}

/** Takes a snapshot into `dir` (see checkSnapshotDir); resolves to its manifest once verified. */
export async function takeSnapshot(
  deps: SnapshotDeps,
  dir: string,
  onProgress: (p: SnapshotProgress) => void = () => {},
): Promise<Manifest> {
  const refusal = checkSnapshotDir(dir);
  if (refusal) throw new SnapshotError(refusal);
  const { store, gate, log } = deps;
  fs.mkdirSync(path.join(dir, TABLES_DIR), { recursive: true });
  const started = Date.now();
  let frozen: Frozen | undefined;
  try {
    frozen = await prepareFreeze(store, await snapshotTables(store, store.database));
    const prepared = frozen;
    // The writers wait only while the clones are filled (see freeze.ts); the rest reads the clones.
    const closing = Date.now();
    await gate.close(() => capture(store, prepared));
    const pauseMs = Date.now() - closing;
    await derive(store, frozen);
    onProgress({ phase: 'freeze', done: 1, of: 1 });
    log.info('snapshot instant taken; writers running again', { dir, pauseMs, tables: frozen.tables.length });
    const manifest = { ...(await describe(store, frozen, onProgress)), pause_ms: pauseMs };
    await backupStore(store, backupList(frozen), dir, (bytes) => onProgress({ phase: 'backup', done: 0, of: 1, bytes }));
    const copied = frozen.tables.filter(copiedAsFile);
    for (const [i, t] of copied.entries()) {
      await store.command(
        `INSERT INTO FUNCTION file(${sqlString(fileOf(dir, t))}, Native) SELECT * FROM ${frozen.database}.${t.name}`,
        undefined,
        {
          timeoutMs: 0,
        },
      );
      onProgress({ phase: 'copies', done: i + 1, of: copied.length });
    }
    await verify(store, dir, manifest, frozen.tables, onProgress);
    manifest.bytes = folderBytes(dir);
    writeManifest(dir, manifest);
    // What a restore will read, read back.
    const reread = readManifest(dir);
    if (JSON.stringify(reread) !== JSON.stringify(manifest)) throw new SnapshotError(`${MANIFEST_FILE} reads back differently`);
    log.info('snapshot verified', { dir, bytes: manifest.bytes, sources: manifest.sources, pauseMs, ms: Date.now() - started });
    return manifest;
  } catch (err) {
    // A snapshot that is not verified is no snapshot: nothing left that could be mistaken for one
    // (the folder itself stays: it may be the operator's mount point).
    for (const entry of fs.readdirSync(dir)) fs.rmSync(path.join(dir, entry), { recursive: true, force: true });
    throw err;
  } finally {
    if (frozen) await thaw(store, frozen);
  }
}
