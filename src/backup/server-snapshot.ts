import type { Logger } from '../log.js';
import type { Store } from '../storage/gateway.js';
import { type Destination, DestinationError, destinationSql, shown } from './destination.js';
import { backupList, capture, derive, type Frozen, prepareFreeze, thaw } from './freeze.js';
import { SnapshotError, snapshotTables, type StoredTable } from './manifest.js';
import { readServerManifest, restoreBackup } from './server-restore.js';
import { differencesOfCopy } from './verify.js';
import { COPY_PREFIX, MANIFEST_DB, MANIFEST_TABLE, runAsync, type ServerManifest } from './server-backups.js';
import { describe, type SnapshotProgress } from './snapshot.js';

/**
 * `vulndb backup <destination>` against a ClickHouse server (SPEC §14): the server's own BACKUP to
 * a destination configured on it (destination.ts), driven from the CLI through the store.
 *
 * One instant across tables: the workers and API processes writing to the server pass the
 * commit gate in Redis (src/locks/shared-gate.ts); closed by `hold`, it lets no batch in while
 * the tables are cloned (freeze.ts), and the rest reads the clones: their sums, the BACKUP (each
 * clone under its source's name; the key-value tables' rows as MergeTree tables `snapshot_rows_*`,
 * which BACKUP carries; the manifest as a table of its own), and the verification, which restores
 * the backup into a scratch database and compares every table with the manifest.
 */

export type GateHolder = <T>(work: () => Promise<T>) => Promise<{ result: T; heldMs: number }>;

export interface ServerSnapshotDeps {
  store: Store;
  /** Closes the cross-process commit gate around `work` (closeSharedGate in production). */
  hold: GateHolder;
  log: Logger;
}

/** Refusals that need no snapshot: the disk unknown to the server, a cluster or replicated tables. */
async function refuseEarly(store: Store, dest: Destination, tables: StoredTable[]): Promise<void> {
  const replicated = tables.filter((t) => t.engine.startsWith('Replicated')).map((t) => t.name);
  if (store.cluster || replicated.length > 0)
    // A clone of a replicated table would share its replication path (freeze.ts).
    throw new DestinationError(
      `${store.cluster ? 'CLICKHOUSE_CLUSTER is set' : `replicated tables (${replicated.slice(0, 2).join(', ')}…)`}: vulndb backup drives single servers only; ` +
        'on a cluster use BACKUP … ON CLUSTER as docs/OPERATIONS.md says',
    );
  if (dest.kind === 'disk') {
    const [found] = await store.query<{ n: number }>('SELECT count() AS n FROM system.disks WHERE name = {d:String}', { d: dest.disk });
    if (!found?.n) throw new DestinationError(`the server has no disk named ${dest.disk} (see system.disks and backups.allowed_disk)`);
  }
}

/** The manifest as a one-row table in the frozen database, backed up under MANIFEST_DB. */
async function storeManifest(store: Store, frozen: Frozen, manifest: ServerManifest): Promise<void> {
  await store.command(`CREATE TABLE ${frozen.database}.${MANIFEST_TABLE} (json String) ENGINE = MergeTree ORDER BY tuple()`);
  await store.insert(`${frozen.database}.${MANIFEST_TABLE}`, [{ json: JSON.stringify(manifest) }]);
}

/** Restores what was written into a scratch database and compares it with the manifest. */
async function verifyBackup(
  store: Store,
  dest: Destination,
  manifest: ServerManifest,
  source: StoredTable[],
  onProgress: (p: SnapshotProgress) => void,
) {
  const recorded = await readServerManifest(store, dest);
  if (JSON.stringify(recorded) !== JSON.stringify(manifest)) throw new SnapshotError(`${shown(dest)}: the manifest reads back differently`);
  const wrong = await differencesOfCopy(store, {
    source,
    recorded: manifest.tables,
    restore: (scratch) => restoreBackup(store, dest, manifest, scratch, () => {}),
    onTable: (done, of) => onProgress({ phase: 'verify', done, of }),
  });
  if (wrong.length > 0) throw new SnapshotError(`the backup differs from the store it copied: ${wrong.join('; ')}`);
}

/** Takes a snapshot to `dest`; resolves to its manifest once the backup is complete and verified. */
export async function takeServerSnapshot(
  deps: ServerSnapshotDeps,
  dest: Destination,
  onProgress: (p: SnapshotProgress) => void = () => {},
): Promise<ServerManifest> {
  const { store, hold, log } = deps;
  const tables = await snapshotTables(store, store.database);
  await refuseEarly(store, dest, tables);
  const started = Date.now();
  const frozen = await prepareFreeze(store, tables);
  try {
    const { heldMs } = await hold(() => capture(store, frozen));
    await derive(store, frozen);
    onProgress({ phase: 'freeze', done: 1, of: 1 });
    log.info('snapshot instant taken; writers running again', { destination: shown(dest), pauseMs: heldMs, tables: tables.length });
    const manifest: ServerManifest = {
      ...(await describe(store, frozen, onProgress)),
      pause_ms: heldMs,
      destination: shown(dest),
      files: 0,
    };
    await storeManifest(store, frozen, manifest);
    const list = `${backupList(frozen, (t) => `${COPY_PREFIX}${t.name}`)}, TABLE ${frozen.database}.${MANIFEST_TABLE} AS ${MANIFEST_DB}.${MANIFEST_TABLE}`;
    const written = await runAsync(store, dest, `BACKUP ${list} TO ${destinationSql(dest)} ASYNC`, 'BACKUP_CREATED', (s) =>
      onProgress({ phase: 'backup', done: 0, of: 1, bytes: s.bytes }),
    );
    if (written.files === 0) throw new SnapshotError(`${shown(dest)}: the server reports a backup of no files`);
    await verifyBackup(store, dest, manifest, tables, onProgress);
    log.info('snapshot verified', {
      destination: shown(dest),
      bytes: written.bytes,
      files: written.files,
      pauseMs: heldMs,
      ms: Date.now() - started,
    });
    return { ...manifest, bytes: written.bytes, files: written.files };
  } finally {
    await thaw(store, frozen);
  }
}
