import { Suppression } from '../src/decisions/suppression.js';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { findingPage } from '../src/findings/page.js';
import { ingestBatch } from '../src/ingest/batch.js';
import { prepareReport } from '../src/ingest/prepare.js';
import { rewriteTotals } from '../src/ingest/totals.js';
import { ProcessLocks } from '../src/locks/target-locks.js';
import { toClusterStatement } from '../src/storage/cluster.js';
import { openStore, type Store } from '../src/storage/gateway.js';
import { loadMigrations, migrate, SQL_DIR } from '../src/storage/migrate.js';
import { associateTeams } from '../src/teams/associations.js';
import { keepUnmerged, testStoreConfig } from './support/engine.js';
import { report, V, worked } from './support/reports.js';
import { contextFromHistory, snapshot, storedContext } from './support/snapshot.js';

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

async function openCluster(layout: 'single' | 'cluster' = 'cluster'): Promise<Store> {
  const store = await openStore(testStoreConfig(undefined, layout));
  stores.push(store);
  return store;
}

/**
 * The last migration of the previous release (CHANGELOG.md, [0.1.0]: sql/0001–0017; 0018 came
 * after it): the store an upgrade starts from.
 */
const PREVIOUS_RELEASE_LAST = 17;

/** One ingest batch per report, as separate jobs would write them: a key written again is a new version. */
async function ingestEach(store: Store, raws: Record<string, unknown>[]) {
  for (const raw of raws) {
    const p = prepareReport(raw, { maxEventAgeDays: 0, now: 0 });
    if (p.kind !== 'report') throw new Error(`unexpected ${p.kind}`);
    await ingestBatch(store, [p.report], { now: 1_800_000_000 });
    await rewriteTotals(store, new ProcessLocks());
  }
}

const other = { summary: 'Exposed admin panel', description: 'Admin UI reachable', score: 9.1 };
/** Written on the previous release's schema: V found, fixed (r3) on www; V and another issue on b. */
const beforeUpgrade = [
  worked.r1,
  worked.r2,
  worked.r3,
  report({ check_id: 'b-1', target: 'b.example.com', end_time: '2024-01-01 12:00:00', vulnerabilities: [V, other] }),
];
/** Written after the upgrade: V reopens on www and is fixed on b; a new target. */
const afterUpgrade = [
  worked.r4,
  report({ check_id: 'b-2', target: 'b.example.com', end_time: '2024-01-04 12:00:00', vulnerabilities: [other] }),
  report({ check_id: 'c-1', target: 'c.example.com', end_time: '2024-01-04 12:00:00', vulnerabilities: [other] }),
];

/** The pages of both plans (team-b's in id order, every finding by keys) as the API would answer them. */
async function pages(store: Store) {
  const now = 1_800_000_000;
  const page = { page: 1, size: 20 };
  const suppression = new Suppression(store);
  return {
    team: await findingPage(store, suppression, {}, { team: 'team-b' }, page, now),
    all: await findingPage(store, suppression, {}, { sortBy: '-score' }, page, now),
    open: await findingPage(store, suppression, {}, { status: 'OPEN' }, page, now),
  };
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
/** Their sorting keys: UUIDs in id order (src/storage/cluster.ts). */
const SORTED_BY: Record<string, string> = {
  finding_latest_events: 'UUIDToNum(finding_id)',
  issue_objects: 'UUIDToNum(id)',
  target_objects: 'UUIDToNum(id)',
  finding_total_values: 'scope',
};

describe('the cluster layout on the embedded engine', () => {
  it('runs every migration from an empty store, leaving the tables of the cluster plan', async () => {
    const store = await openCluster();
    const applied = await migrate(store);
    expect(applied).toEqual(loadMigrations().map((m) => m.version));
    const tables = await tablesOf(store);
    expect(new Map(tables.map((t) => [t.name, t.engine]))).toEqual(plannedTables());
    expect(tables.filter((t) => t.engine === 'EmbeddedRocksDB')).toEqual([]);
    for (const name of Object.keys(KEY_VALUE)) {
      expect(tables.find((t) => t.name === name)).toMatchObject({ engine: 'ReplacingMergeTree', sorting_key: SORTED_BY[name] });
      expect(tables.find((t) => t.name === name)!.ddl).toContain('index_granularity = 128, min_compress_block_size = 4096');
      expect(tables.find((t) => t.name === name)!.ddl).toContain('min_bytes_for_wide_part = 1099511627776');
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

  it("upgrades the previous release's store holding unmerged versions, and answers as the single layout does", async () => {
    const versions = loadMigrations().map((m) => m.version);
    const cluster = await openCluster();
    const single = await openCluster('single');
    const previous = migrationsUpTo(PREVIOUS_RELEASE_LAST);
    for (const store of [cluster, single]) {
      expect(await migrate(store, undefined, previous)).toEqual(versions.filter((v) => v <= PREVIOUS_RELEASE_LAST));
    }
    // Merges stop for the whole engine of this file: neither store merges from here on.
    await keepUnmerged(cluster);
    for (const store of [cluster, single]) {
      await ingestEach(store, beforeUpgrade);
      await associateTeams(store, new ProcessLocks(), 'b.example.com', ['team-b']);
      expect(await migrate(store)).toEqual(versions.filter((v) => v > PREVIOUS_RELEASE_LAST));
      await ingestEach(store, afterUpgrade);
    }
    expect(new Map((await tablesOf(cluster)).map((t) => [t.name, t.engine]))).toEqual(plannedTables());
    // Versions written before and after the upgrade are all there, unmerged (issues and targets
    // are written once each here: their content never changes).
    for (const [table, key] of Object.entries({ finding_latest_events: 'finding_id', finding_total_values: 'scope', findings: 'id' })) {
      const [n] = await cluster.query<{ rows: number; keys: number }>(`SELECT count() AS rows, uniqExact(${key}) AS keys FROM ${table}`);
      expect(n!.rows, table).toBeGreaterThan(n!.keys);
    }
    expect(await storedContext(cluster)).toEqual(await contextFromHistory(cluster));
    expect(await storedContext(cluster)).toEqual(await storedContext(single));
    expect(await snapshot(cluster)).toEqual(await snapshot(single));
    const answered = await pages(cluster);
    expect(answered).toEqual(await pages(single));
    // b.example.com's two findings in team-b, V fixed there; www's V open again; c's finding.
    expect(answered.team.rows.map((r) => r.status).sort()).toEqual(['FIXED', 'OPEN']);
    expect(answered.all.pagination.total).toBe(4);
    expect(answered.open.rows).toHaveLength(3);
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
