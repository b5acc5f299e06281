import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { ClusterSqlError, embeddedRocksDbTables, toClusterSql, toClusterStatement } from '../src/storage/cluster.js';
import { openStore, type Store } from '../src/storage/gateway.js';
import { migrate, SQL_DIR } from '../src/storage/migrate.js';
import { splitStatements } from '../src/storage/statements.js';
import { testStoreConfig } from './support/engine.js';

/**
 * CLICKHOUSE_CLUSTER (docs/SCALING.md): every migration of sql/ rewritten for a cluster. The
 * rewritten statements are parsed by the engine (formatQuery) without being run: this machine has
 * no cluster, ZooKeeper or macros.
 */

const files = fs
  .readdirSync(SQL_DIR)
  .filter((f) => f.endsWith('.sql'))
  .sort();
const read = (f: string) => fs.readFileSync(path.join(SQL_DIR, f), 'utf8');
const CLUSTER = 'vulndb_cluster';

let store: Store;
beforeAll(async () => {
  store = await openStore(testStoreConfig());
});
afterAll(async () => {
  await store.close();
});

describe('no cluster', () => {
  it.each(files)('%s is unchanged', (f) => {
    expect(toClusterSql(read(f), undefined)).toBe(read(f));
    expect(toClusterSql(read(f), '')).toBe(read(f));
  });
});

describe.each(files)('%s on a cluster', (f) => {
  // Changes of EmbeddedRocksDB settings have no cluster form (see below).
  const original = splitStatements(read(f)).filter((s) => toClusterStatement(s, CLUSTER) !== undefined);
  const rewritten = splitStatements(toClusterSql(read(f), CLUSTER));

  it('keeps one statement per statement', () => {
    expect(rewritten).toHaveLength(original.length);
  });

  it('every generated statement parses', async () => {
    for (const s of rewritten) {
      const [row] = await store.query<{ f: string }>('SELECT formatQuery({q:String}) AS f', { q: s });
      expect(row!.f.length).toBeGreaterThan(0);
    }
  });

  it('DDL runs ON CLUSTER, inserts run once, MergeTree engines are replicated with their parameters', () => {
    original.forEach((before, i) => {
      const after = rewritten[i]!;
      const create = /^CREATE\s+(?:OR\s+REPLACE\s+)?(DATABASE|TABLE|VIEW|MATERIALIZED\s+VIEW)\s+(?:IF\s+NOT\s+EXISTS\s+)?(\w+)/i.exec(
        before,
      );
      if (create) {
        const name = create[2]!;
        expect(after).toContain(`${name} ON CLUSTER \`${CLUSTER}\``);
        const engine = /ENGINE\s*=\s*(\w*MergeTree)(?:\(([^)]*)\))?/.exec(before);
        if (engine) {
          const params = engine[2] ? `, ${engine[2]}` : '';
          expect(after).toContain(`ENGINE = Replicated${engine[1]}('/clickhouse/tables/{shard}/{database}/${name}', '{replica}'${params})`);
          expect(after).toMatch(/SETTINGS replicated_deduplication_window = 0\b/);
        }
        if (/ENGINE\s*=\s*Null/.test(before)) expect(after).toMatch(/ENGINE\s*=\s*Null/);
        if (/ENGINE\s*=\s*EmbeddedRocksDB/.test(before)) {
          const key = /PRIMARY\s+KEY\s+(\w+)/.exec(before)![1]!;
          // A UUID key is sorted in id order (UUIDToNum), where a page's keys are neighbours.
          const order = new RegExp(`\\b${key}\\s+UUID\\b`).test(before) ? `UUIDToNum(${key})` : key;
          expect(after).toContain(
            `ENGINE = ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/${name}', '{replica}')\nORDER BY ${order}`,
          );
          expect(after).toMatch(
            /index_granularity = 128, min_compress_block_size = 4096, max_compress_block_size = 8192, min_bytes_for_wide_part = 1099511627776$/,
          );
          expect(after).not.toMatch(/EmbeddedRocksDB|PRIMARY KEY/);
        }
        // Everything after the engine clause (ORDER BY, SETTINGS) and before it (columns, SELECT) survives.
        const orderBy = /ORDER BY ([^\n]+)/.exec(before);
        if (orderBy && !/\bAS\s+SELECT\b/i.test(before) && !/\bAS\s*\n?\s*SELECT\b/i.test(before))
          expect(after).toContain(`ORDER BY ${orderBy[1]!.trim()}`);
      } else if (/^ALTER\s+TABLE\s+(\w+)/i.test(before)) {
        const name = /^ALTER\s+TABLE\s+(\w+)/i.exec(before)![1]!;
        expect(after).toBe(before.replace(`ALTER TABLE ${name}`, `ALTER TABLE ${name} ON CLUSTER \`${CLUSTER}\``));
      } else {
        expect(before).toMatch(/^INSERT\s+INTO\b/i);
        expect(after).toBe(before);
      }
      expect(after).not.toMatch(/ENGINE\s*=\s*(?!Replicated|Null)\w/);
    });
  });
});

describe('the transformation', () => {
  it('replaces every EmbeddedRocksDB table of sql/', () => {
    const rocks = files.flatMap((f) => embeddedRocksDbTables(read(f)));
    expect(rocks.sort()).toEqual(['finding_latest_events', 'finding_total_values', 'issue_objects', 'target_objects']);
    for (const f of files) expect(toClusterSql(read(f), CLUSTER)).not.toContain('EmbeddedRocksDB');
  });

  it('refuses what it has no cluster form for, and bad cluster names', () => {
    expect(() => toClusterStatement('CREATE TABLE m (x UInt8) ENGINE = Memory', CLUSTER)).toThrow(ClusterSqlError);
    expect(() => toClusterStatement('SYSTEM RELOAD DICTIONARIES', CLUSTER)).toThrow(/no cluster form/);
    expect(() => toClusterStatement('CREATE TABLE t (x UInt8) ENGINE = MergeTree ORDER BY x', 'a b')).toThrow(/invalid cluster name/);
  });

  it('leaves out changes of EmbeddedRocksDB settings only: the tables are ReplacingMergeTree there', () => {
    expect(toClusterStatement('ALTER TABLE finding_latest_events MODIFY SETTING optimize_for_bulk_insert = 0', CLUSTER)).toBeUndefined();
    expect(
      toClusterStatement('ALTER TABLE t MODIFY SETTING optimize_for_bulk_insert = 0, bulk_insert_block_size = 9', undefined),
    ).toBeUndefined();
    expect(toClusterStatement('ALTER TABLE t MODIFY SETTING optimize_for_bulk_insert = 0, index_granularity = 8', 'c')).toBe(
      'ALTER TABLE t ON CLUSTER `c` MODIFY SETTING optimize_for_bulk_insert = 0, index_granularity = 8',
    );
    const rocks = splitStatements(read('0019_small_batch_writes.sql')).filter((s) => /optimize_for_bulk_insert/.test(s));
    expect(rocks).toHaveLength(4);
    expect(toClusterSql(read('0019_small_batch_writes.sql'), CLUSTER)).not.toContain('optimize_for_bulk_insert');
  });

  it('handles OPTIMIZE, DROP, RENAME and parameters with nested parentheses', () => {
    expect(toClusterStatement('OPTIMIZE TABLE findings FINAL', 'c')).toBe('OPTIMIZE TABLE findings ON CLUSTER `c` FINAL');
    expect(toClusterStatement('DROP TABLE IF EXISTS x', 'c')).toBe('DROP TABLE IF EXISTS x ON CLUSTER `c`');
    expect(toClusterStatement('RENAME TABLE a TO b', 'c')).toBe('RENAME TABLE a TO b ON CLUSTER `c`');
    expect(toClusterStatement('CREATE TABLE t (s Int8, v UInt8) ENGINE = CollapsingMergeTree(s) ORDER BY v', 'c')).toContain(
      "ENGINE = ReplicatedCollapsingMergeTree('/clickhouse/tables/{shard}/{database}/t', '{replica}', s)",
    );
    expect(
      toClusterStatement('CREATE TABLE db.t (a UInt8) ENGINE = SummingMergeTree((a, b)) ORDER BY a SETTINGS index_granularity = 8', 'c'),
    ).toBe(
      "CREATE TABLE db.t ON CLUSTER `c` (a UInt8) ENGINE = ReplicatedSummingMergeTree('/clickhouse/tables/{shard}/{database}/t', '{replica}', (a, b)) ORDER BY a SETTINGS replicated_deduplication_window = 0, index_granularity = 8",
    );
  });

  it('migrate runs the database, the ledger and every migration through it', async () => {
    const seen: string[] = [];
    const fake = {
      mode: 'server',
      database: 'vulndb',
      cluster: CLUSTER,
      command: async (sql: string) => void seen.push(sql),
      query: async () => [],
      insert: async () => undefined,
    } as unknown as Store;
    await migrate(fake);
    expect(seen[0]).toBe(`CREATE DATABASE IF NOT EXISTS vulndb ON CLUSTER \`${CLUSTER}\``);
    expect(seen[1]).toMatch(/CREATE TABLE IF NOT EXISTS schema_migrations ON CLUSTER `vulndb_cluster`/);
    expect(seen[1]).toContain("ENGINE = ReplicatedMergeTree('/clickhouse/tables/{shard}/{database}/schema_migrations', '{replica}')");
    const expected = files.flatMap((f) => splitStatements(toClusterSql(read(f), CLUSTER)));
    expect(seen.slice(2)).toEqual(expected);
    for (const s of seen) {
      const [row] = await store.query<{ f: string }>('SELECT formatQuery({q:String}) AS f', { q: s });
      expect(row!.f).toBeTruthy();
    }
  });

  it('CLICKHOUSE_CLUSTER is a server-mode setting', () => {
    expect(loadConfig({ CLICKHOUSE_URL: 'http://ch:8123', CLICKHOUSE_CLUSTER: 'main' }).store.cluster).toBe('main');
    expect(loadConfig({}).store.cluster).toBeUndefined();
    expect(() => loadConfig({ CLICKHOUSE_CLUSTER: 'main' })).toThrow(/needs a server/);
    expect(() => loadConfig({ CLICKHOUSE_URL: 'http://ch:8123', CLICKHOUSE_CLUSTER: 'a b' })).toThrow(/CLICKHOUSE_CLUSTER/);
  });
});
