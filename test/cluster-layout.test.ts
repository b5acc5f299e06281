import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { toClusterStatement } from '../src/storage/cluster.js';
import { openStore, type Store } from '../src/storage/gateway.js';
import { loadMigrations, migrate, SQL_DIR } from '../src/storage/migrate.js';
import { keepUnmerged, testStoreConfig } from './support/engine.js';

/**
 * CLICKHOUSE_LAYOUT=cluster on the embedded engine (docs/SCALING.md): the cluster rewrite of every
 * migration without ON CLUSTER and replication, executed; the tables it leaves are the cluster's,
 * in their plain forms; the key-value tables read the latest of unmerged versions.
 */

const dirs: string[] = [];
const stores: Store[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
});

async function openCluster(): Promise<Store> {
  const store = await openStore(testStoreConfig(undefined, 'cluster'));
  stores.push(store);
  return store;
}

/** A folder with the migrations of sql/ up to `last`. */
function migrationsUpTo(last: number): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vulndb-cluster-migrations-'));
  dirs.push(dir);
  for (const f of fs.readdirSync(SQL_DIR).filter((f) => Number(f.slice(0, 4)) <= last))
    fs.copyFileSync(path.join(SQL_DIR, f), path.join(dir, f));
  return dir;
}

/** The cluster plan: each table the migrations create, with the engine the rewrite gives it on one node. */
function plannedTables(): Map<string, string> {
  const out = new Map<string, string>([['schema_migrations', 'MergeTree']]);
  for (const m of loadMigrations()) {
    for (const s of m.statements) {
      const rewritten = toClusterStatement(s, undefined) ?? '';
      const table = /^CREATE\s+TABLE\s+IF\s+NOT\s+EXISTS\s+(\w+)/i.exec(rewritten);
      const view = /^CREATE\s+(?:MATERIALIZED\s+)?VIEW\s+IF\s+NOT\s+EXISTS\s+(\w+)/i.exec(rewritten);
      if (table) out.set(table[1]!, /\bENGINE\s*=\s*(\w+)/.exec(rewritten)![1]!);
      else if (view) out.set(view[1]!, /MATERIALIZED/i.test(rewritten) ? 'MaterializedView' : 'View');
    }
  }
  return out;
}

async function tablesOf(store: Store) {
  const rows = await store.query<{ name: string; engine: string; sorting_key: string; ddl: string }>(
    'SELECT name, engine, sorting_key, create_table_query AS ddl FROM system.tables WHERE database = {db:String} ORDER BY name',
    { db: store.database },
  );
  return rows;
}

const KEY_VALUE = { finding_latest_events: 'finding_id', issue_objects: 'id', target_objects: 'id', finding_total_values: 'scope' };

describe('the cluster layout on the embedded engine', () => {
  it('runs every migration from an empty store, leaving the tables of the cluster plan', async () => {
    const store = await openCluster();
    const applied = await migrate(store);
    expect(applied).toEqual(loadMigrations().map((m) => m.version));
    const tables = await tablesOf(store);
    expect(new Map(tables.map((t) => [t.name, t.engine]))).toEqual(plannedTables());
    expect(tables.filter((t) => t.engine === 'EmbeddedRocksDB')).toEqual([]);
    for (const [name, key] of Object.entries(KEY_VALUE)) {
      expect(tables.find((t) => t.name === name)).toMatchObject({ engine: 'ReplacingMergeTree', sorting_key: key });
      expect(tables.find((t) => t.name === name)!.ddl).toContain('index_granularity = 128');
    }
    expect(await migrate(store)).toEqual([]);
  });

  it('runs the latest migrations on a store of the previous release', async () => {
    const store = await openCluster();
    const versions = loadMigrations().map((m) => m.version);
    const previous = versions.at(-2)!;
    expect(await migrate(store, undefined, migrationsUpTo(previous))).toEqual(versions.filter((v) => v <= previous));
    expect(await migrate(store)).toEqual([versions.at(-1)]);
    expect(new Map((await tablesOf(store)).map((t) => [t.name, t.engine]))).toEqual(plannedTables());
  });

  it('reads the latest write of each key while the versions are unmerged', async () => {
    const store = await openCluster();
    await migrate(store);
    await keepUnmerged(store);
    const id = (n: number) => `00000000-0000-5000-8000-00000000000${n}`;
    for (const identifier of ['a', 'b', 'c']) {
      await store.insert('target_objects', [
        { id: id(1), identifier: `${identifier}1`, teams: [] },
        { id: id(2), identifier: `${identifier}2`, teams: [] },
      ]);
    }
    await store.insert('target_objects', [{ id: id(1), identifier: 'a1', teams: ['t'] }]);
    const [stored] = await store.query<{ n: number }>('SELECT count() AS n FROM target_objects');
    expect(stored!.n).toBe(7);
    const latest = await store.query<{ id: string; identifier: string; teams: string[] }>(
      `SELECT id, identifier, teams FROM ${store.keyed.latest('target_objects')} ORDER BY id`,
    );
    expect(latest).toEqual([
      { id: id(1), identifier: 'a1', teams: ['t'] },
      { id: id(2), identifier: 'c2', teams: [] },
    ]);
    const joined = await store.query<{ k: string; identifier: string }>(
      `SELECT k, t.identifier AS identifier
       FROM (SELECT arrayJoin({ids:Array(UUID)}) AS k) AS f
       LEFT JOIN ${store.keyed.byKeys('target_objects', 'id', '{ids:Array(UUID)}')} AS t ON t.id = f.k
       ORDER BY k SETTINGS ${store.keyed.joinSettings}`,
      { ids: [id(2), id(3)] },
    );
    expect(joined).toEqual([
      { k: id(2), identifier: 'c2' },
      { k: id(3), identifier: '' },
    ]);
  });
});

describe('CLICKHOUSE_LAYOUT', () => {
  it('is cluster with CLICKHOUSE_CLUSTER, else single, and cluster is allowed on the embedded engine', () => {
    expect(loadConfig({}).store.layout).toBe('single');
    expect(loadConfig({ CLICKHOUSE_LAYOUT: 'cluster' }).store.layout).toBe('cluster');
    expect(loadConfig({ CLICKHOUSE_URL: 'http://ch:8123', CLICKHOUSE_CLUSTER: 'main' }).store.layout).toBe('cluster');
    expect(() => loadConfig({ CLICKHOUSE_LAYOUT: 'sharded' })).toThrow(/CLICKHOUSE_LAYOUT/);
    expect(() => loadConfig({ CLICKHOUSE_URL: 'http://ch:8123', CLICKHOUSE_CLUSTER: 'main', CLICKHOUSE_LAYOUT: 'single' })).toThrow(
      /CLICKHOUSE_LAYOUT=cluster/,
    );
  });
});
