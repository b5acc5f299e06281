import type { Logger } from '../log.js';
import type { Store } from '../storage/gateway.js';
import { type Destination, destinationSql, shown } from './destination.js';
import { scratchName } from './freeze.js';
import { copiedAsFile, SnapshotError } from './manifest.js';
import { checkAndMigrate, emptyOrRefuse, type RestoreProgress, type RestoreResult } from './restore.js';
import {
  backupFailure,
  COPY_PREFIX,
  MANIFEST_DB,
  MANIFEST_TABLE,
  runAsync,
  type ServerManifest,
  serverManifest,
} from './server-backups.js';

/**
 * `vulndb restore <destination>` against a ClickHouse server (SPEC §14): the server's RESTORE of a
 * backup written by `vulndb backup` (server-snapshot.ts) into an empty store, with the service
 * stopped; then the key-value tables' rows moved in from their `snapshot_rows_*` tables, every
 * table checked against the manifest, the later migrations applied and the totals rewritten.
 */

/** The manifest a backup holds; SnapshotError when there is no backup there or it is not vulndb's. */
export async function readServerManifest(store: Store, dest: Destination): Promise<ServerManifest> {
  const scratch = scratchName(store.database, 'manifest');
  await store.command(`CREATE DATABASE ${scratch}`);
  try {
    try {
      await store.command(
        `RESTORE TABLE ${MANIFEST_DB}.${MANIFEST_TABLE} AS ${scratch}.${MANIFEST_TABLE} FROM ${destinationSql(dest)}`,
        undefined,
        { timeoutMs: 0 },
      );
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (/BACKUP_NOT_FOUND|not found/i.test(message)) throw new SnapshotError(`there is no backup at ${shown(dest)}`);
      if (/UNKNOWN_TABLE|UNKNOWN_DATABASE|not found in backup|doesn't exist in backup|does not exist/i.test(message))
        throw new SnapshotError(`${shown(dest)} is not a vulndb snapshot: it holds no ${MANIFEST_DB}.${MANIFEST_TABLE}`);
      throw backupFailure(dest, message);
    }
    const rows = await store.query<{ json: string }>(`SELECT json FROM ${scratch}.${MANIFEST_TABLE}`);
    const parsed = rows.length === 1 ? serverManifest.safeParse(JSON.parse(rows[0]!.json)) : undefined;
    if (!parsed?.success) throw new SnapshotError(`${shown(dest)}: its manifest is not a vulndb snapshot manifest`);
    return parsed.data;
  } finally {
    await store.command(`DROP DATABASE IF EXISTS ${scratch} SYNC`, undefined, { timeoutMs: 0 });
  }
}

/** RESTOREs the backup's database into `into` (existing, empty), then moves the key-value rows into their tables. */
export async function restoreBackup(
  store: Store,
  dest: Destination,
  manifest: ServerManifest,
  into: string,
  onState: (s: { files: number; bytes: number }) => void,
): Promise<void> {
  const rename = manifest.database === into ? '' : ` AS ${into}`;
  await runAsync(store, dest, `RESTORE DATABASE ${manifest.database}${rename} FROM ${destinationSql(dest)} ASYNC`, 'RESTORED', onState);
  for (const t of manifest.tables.filter(copiedAsFile)) {
    await store.command(`INSERT INTO ${into}.${t.name} SELECT * FROM ${into}.${COPY_PREFIX}${t.name}`, undefined, { timeoutMs: 0 });
    await store.command(`DROP TABLE ${into}.${COPY_PREFIX}${t.name} SYNC`);
  }
}

export async function restoreServerSnapshot(
  store: Store,
  dest: Destination,
  log: Logger,
  onProgress: (p: RestoreProgress & { bytes?: number }) => void = () => {},
): Promise<RestoreResult> {
  const manifest = await readServerManifest(store, dest);
  await emptyOrRefuse(store);
  onProgress({ phase: 'restore', done: 0, of: 1 });
  await restoreBackup(store, dest, manifest, store.database, (s) => onProgress({ phase: 'restore', done: 0, of: 1, bytes: s.bytes }));
  onProgress({ phase: 'restore', done: 1, of: 1 });
  const migrations = await checkAndMigrate(store, manifest, log, onProgress);
  log.info('snapshot restored', {
    destination: shown(dest),
    schemaVersion: manifest.schema_version,
    migrations,
    sources: manifest.sources,
  });
  return { manifest, migrations };
}
