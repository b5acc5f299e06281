import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll } from 'vitest';
import type { StoreConfig, StoreLayout } from '../../src/config.js';
import { openStore, type Store } from '../../src/storage/gateway.js';
import { migrate } from '../../src/storage/migrate.js';

/**
 * Every test file runs in its own process (vitest pool "forks") with its own embedded engine in
 * a temporary data folder, removed when the file finishes. Tests isolate themselves further with a
 * fresh database each.
 */

/**
 * VULNDB_TEST_LAYOUT=cluster: stores in the cluster layout (CLICKHOUSE_LAYOUT, docs/SCALING.md),
 * their parts left unmerged (keepUnmerged) so that every read meets several versions of a key.
 */
export const TEST_LAYOUT: StoreLayout = process.env.VULNDB_TEST_LAYOUT === 'cluster' ? 'cluster' : 'single';

let dir: string | undefined;
const opened: Store[] = [];

export function testDataDir(): string {
  dir ??= fs.mkdtempSync(path.join(os.tmpdir(), 'vulndb-test-'));
  return dir;
}

export function testStoreConfig(database = `t_${randomUUID().replace(/-/g, '')}`, layout = TEST_LAYOUT): StoreConfig {
  return {
    url: undefined,
    database,
    user: 'default',
    password: '',
    embeddedPath: path.join(testDataDir(), 'clickhouse'),
    layout,
  };
}

/**
 * In the cluster layout, after migrations: no part of the tables that exist is merged in the
 * background (SYSTEM STOP MERGES, for the whole engine of this test process) and an insert keeps
 * its duplicate keys (optimize_on_insert = 0, in the store's session), so that reads meet every
 * version a cluster replica may hold before its merges. Nothing in the single layout.
 */
export async function keepUnmerged(store: Store): Promise<void> {
  if (store.layout !== 'cluster') return;
  await store.command('SET optimize_on_insert = 0');
  await store.command('SYSTEM STOP MERGES');
}

/**
 * A test's DELETE of rows. In the cluster layout the table is a MergeTree, where a DELETE is a
 * mutation, which waits for the merges keepUnmerged stopped: they run for this table meanwhile.
 */
export async function deleteRows(store: Store, table: string, where: string, params: Record<string, unknown>): Promise<void> {
  if (store.layout === 'cluster') await store.command(`SYSTEM START MERGES ${table}`);
  await store.command(`DELETE FROM ${table} WHERE ${where}`, params);
  if (store.layout === 'cluster') await store.command(`SYSTEM STOP MERGES ${table}`);
}

/** A migrated store on a database of its own. */
export async function freshStore(): Promise<Store> {
  const store = await openStore(testStoreConfig());
  opened.push(store);
  await migrate(store);
  await keepUnmerged(store);
  return store;
}

/**
 * Empties every table of a migrated store, keeping its schema (the ledger too): a fresh store for
 * tests that need many, at a fifth of the cost of migrating a new database.
 */
export async function emptyStore(store: Store): Promise<void> {
  const tables = await store.query<{ name: string }>(
    `SELECT name FROM system.tables
     WHERE database = {db:String} AND engine NOT IN ('MaterializedView', 'View', 'Null') AND name != 'schema_migrations'`,
    { db: store.database },
  );
  for (const { name } of tables) await store.command(`TRUNCATE TABLE ${name}`);
}

afterAll(async () => {
  for (const s of opened.splice(0)) await s.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
  dir = undefined;
});
