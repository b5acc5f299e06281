import { z } from 'zod';
import type { Store } from '../storage/gateway.js';
import { type Destination, DestinationError, redact, shown } from './destination.js';
import { manifestSchema, SnapshotError } from './manifest.js';

/**
 * What the server-mode backup and restore share (SPEC §14): the names a backup holds besides the
 * store's tables, the manifest's form, and the server's asynchronous BACKUP/RESTORE followed
 * through system.backups.
 */

/** Where the manifest travels in the backup: a database of its own, so it is read without knowing the source's name. */
export const MANIFEST_DB = 'vulndb_snapshot';
export const MANIFEST_TABLE = 'manifest';
/** The MergeTree tables carrying the key-value tables' rows in a backup (BACKUP skips EmbeddedRocksDB rows). */
export const COPY_PREFIX = 'snapshot_rows_';

export const serverManifest = manifestSchema.extend({ destination: z.string(), files: z.number().int().nonnegative() });

export type ServerManifest = z.infer<typeof serverManifest>;

/** The server's words for a failed BACKUP/RESTORE, as a refusal where the operator can act on it. */
export function backupFailure(dest: Destination, message: string): Error {
  const text = redact(dest, message.split('\n')[0] ?? message);
  if (/BACKUP_ALREADY_EXISTS|already exists/i.test(text))
    return new DestinationError(`${shown(dest)} exists already: a snapshot goes to a new name`);
  if (/is not allowed for backups|not allowed/i.test(text))
    return new DestinationError(`the server does not allow ${shown(dest)}: ${text}`);
  return new SnapshotError(`the server's BACKUP of ${shown(dest)} failed: ${text}`);
}

/** Starts `statement` (BACKUP … ASYNC or RESTORE … ASYNC) and polls system.backups until it ends. */
export async function runAsync(
  store: Store,
  dest: Destination,
  statement: string,
  done: string,
  onState: (state: { files: number; bytes: number }) => void,
): Promise<{ files: number; bytes: number }> {
  let id: string;
  try {
    const [started] = await store.query<{ id: string }>(statement, undefined, { timeoutMs: 0 });
    id = started!.id;
  } catch (err) {
    throw backupFailure(dest, err instanceof Error ? err.message : String(err));
  }
  for (;;) {
    const [state] = await store.query<{ status: string; files: number; bytes: number; error: string }>(
      'SELECT toString(status) AS status, num_files AS files, total_size AS bytes, error FROM system.backups WHERE id = {id:String}',
      { id },
    );
    if (!state)
      throw new SnapshotError(`${shown(dest)}: the server lost track of its ${statement.split(' ')[0]} (no row in system.backups)`);
    onState(state);
    if (state.status === done) return state;
    if (state.status.endsWith('_FAILED') || state.status.endsWith('_CANCELLED')) throw backupFailure(dest, state.error);
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}
