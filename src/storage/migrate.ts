import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../log.js';
import type { Store } from './gateway.js';
import { toClusterStatement } from './cluster.js';
import { splitStatements } from './statements.js';

/**
 * Applies the numbered SQL files of sql/ in order and records each in the schema_migrations
 * ledger. Runs at start-up and from `vulndb migrate`. Every statement is idempotent
 * (IF NOT EXISTS), so two processes starting together converge. A landed migration must never
 * be edited: a changed checksum stops start-up.
 */

/**
 * sql/ at the package root: two levels up from src/storage/ (sources run through tsx), three from
 * dist/src/storage/ (the compiled build of tsconfig.build.json, which the image runs).
 */
const HERE = path.dirname(fileURLToPath(import.meta.url));
export const SQL_DIR =
  [path.resolve(HERE, '../../sql'), path.resolve(HERE, '../../../sql')].find((dir) => fs.existsSync(dir)) ??
  path.resolve(HERE, '../../sql');

export interface Migration {
  version: number;
  name: string;
  checksum: string;
  statements: string[];
}

export function loadMigrations(dir = SQL_DIR): Migration[] {
  return fs
    .readdirSync(dir)
    .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
    .sort()
    .map((file) => {
      const sql = fs.readFileSync(path.join(dir, file), 'utf8');
      return {
        version: Number(file.slice(0, 4)),
        name: file.slice(5, -4),
        checksum: createHash('sha256').update(sql).digest('hex'),
        statements: splitStatements(sql),
      };
    });
}

export class MigrationError extends Error {}

/** Migrations may rewrite whole tables: they run without the statement time limit (SPEC §5.6). */
const UNLIMITED = { timeoutMs: 0 };

/**
 * `cluster` (CLICKHOUSE_CLUSTER, server mode; docs/SCALING.md): every statement, the ledger's
 * included, runs as src/storage/cluster.ts rewrites it (ON CLUSTER, Replicated* engines), after
 * the database is created on every node. The cluster layout without a cluster (CLICKHOUSE_LAYOUT,
 * e.g. on the embedded engine) runs the same rewrite without ON CLUSTER and replication.
 * Checksums stay those of the files.
 */
export async function migrate(store: Store, log?: Logger, dir = SQL_DIR, cluster = store.cluster): Promise<number[]> {
  const clusterLayout = cluster !== undefined || store.layout === 'cluster';
  const rewrite = (statement: string) => (clusterLayout ? toClusterStatement(statement, cluster) : statement);
  const run = async (statement: string) => {
    const rewritten = rewrite(statement);
    if (rewritten !== undefined) await store.command(rewritten, undefined, UNLIMITED);
  };
  if (cluster) await run(`CREATE DATABASE IF NOT EXISTS ${store.database}`);
  await run(`
    CREATE TABLE IF NOT EXISTS schema_migrations
    (
        version    UInt32,
        name       String,
        checksum   String,
        applied_at DateTime('UTC')
    )
    ENGINE = MergeTree
    ORDER BY version`);
  const applied = new Map(
    (
      await store.query<{ version: number; checksum: string }>(
        'SELECT version, any(checksum) AS checksum FROM schema_migrations GROUP BY version',
      )
    ).map((r) => [r.version, r.checksum]),
  );
  const done: number[] = [];
  for (const m of loadMigrations(dir)) {
    const known = applied.get(m.version);
    if (known !== undefined) {
      if (known !== m.checksum) {
        throw new MigrationError(
          `migration ${String(m.version).padStart(4, '0')}_${m.name}.sql changed after it was applied; add a new migration instead`,
        );
      }
      continue;
    }
    for (const statement of m.statements) await run(statement);
    await store.insert('schema_migrations', [
      { version: m.version, name: m.name, checksum: m.checksum, applied_at: Math.floor(Date.now() / 1000) },
    ]);
    log?.info('migration applied', { version: m.version, name: m.name });
    done.push(m.version);
  }
  return done;
}
