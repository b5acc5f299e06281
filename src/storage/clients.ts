import fs from 'node:fs';
import {
  ClickHouseLogLevel,
  createClient,
  type ClickHouseClient,
  type ClickHouseSettings,
  type Logger as ClickHouseLogger,
  type LogParams,
} from '@clickhouse/client';
import type { NodeClickHouseClientConfigOptions } from '@clickhouse/client/dist/config.js';
import type { StoreConfig } from '../config.js';
import type { Logger } from '../log.js';
import { guard, type StatementMetrics, StoreError } from './store-errors.js';
import { ABORT_GRACE_MS } from './time-limits.js';

/**
 * The ClickHouse clients of the two modes (src/storage/gateway.ts wraps either into the store):
 * the embedded engine of chdb by default, a ClickHouse server when CLICKHOUSE_URL is set.
 */

const sessionSettings: ClickHouseSettings = {
  // Counts come back as JSON numbers (they stay far below 2^53) instead of quoted strings.
  output_format_json_quote_64bit_integers: 0,
  // The embedded engine defaults to asynchronous inserts, which makes every INSERT wait for a
  // buffer flush; the worker already writes one large insert per table and batch.
  async_insert: 0,
  // Inserts write named tuples as arrays (see insertStatement).
  input_format_json_named_tuples_as_objects: 0,
  // Primary key analysis of a large IN set (a big team's targets) costs more than it saves.
  use_index_for_in_with_subqueries_max_values: '1000',
  // Answers here are small: formatting them on other threads costs more in hand-offs (about half a
  // millisecond per statement in the embedded engine) than it saves.
  output_format_parallel_formatting: 0,
  // An ingest batch's findings insert feeds seven materialized views (counters, team copies, issue
  // counts): pushed one after the other they were most of a small batch's fixed cost
  // (bench/HISTORY.md, issue 32); pushed concurrently the insert returns sooner.
  parallel_view_processing: 1,
};

/**
 * The client's own log lines (connection trouble, retries, socket warnings) as the service's JSON
 * lines, instead of the multi-line text it prints on stderr by default.
 */
function clientLog(
  log: Logger | undefined,
): { log: { LoggerClass: new () => ClickHouseLogger; level: ClickHouseLogLevel } } | Record<string, never> {
  if (!log) return {};
  const fields = (p: LogParams & { err?: Error }) => ({ module: p.module, ...(p.args ?? {}), ...(p.err ? { err: p.err } : {}) });
  class ServiceLogger implements ClickHouseLogger {
    trace(p: LogParams) {
      log!.debug(p.message, fields(p));
    }
    debug(p: LogParams) {
      log!.debug(p.message, fields(p));
    }
    info(p: LogParams) {
      log!.info(p.message, fields(p));
    }
    warn(p: LogParams & { err?: Error }) {
      log!.warn(p.message, fields(p));
    }
    error(p: LogParams & { err: Error }) {
      log!.error(p.message, fields(p));
    }
  }
  return { log: { LoggerClass: ServiceLogger, level: ClickHouseLogLevel.WARN } };
}

/**
 * `vulndb backup`/`restore` (src/backup) write and read snapshots with the engine's own BACKUP and
 * RESTORE to File(<dir>), which it refuses without `backups.allowed_path`, server configuration
 * that only the engine's start-up arguments can give. The first connection to a data folder starts
 * the engine with its arguments; this one is opened only for that and closed once the client's
 * connection is open. Any path is allowed: the process may write wherever its user may, and asking
 * it to is the admin listener's concern. The data folder's own disk is allowed too, so that the
 * server mode's BACKUP … TO Disk(…) runs on the embedded engine in the tests (src/backup/server-snapshot.ts).
 */
async function backupsAllowed(dataPath: string): Promise<{ close(): void }> {
  const { Session } = await import('chdb');
  return new Session(dataPath, { connectionArgs: ['--backups.allowed_path=/', '--backups.allowed_disk=default'] });
}

/** A client on the embedded engine (chdb) storing under `cfg.embeddedPath`. */
export async function openEmbeddedClient(cfg: StoreConfig, log?: Logger, metrics?: StatementMetrics): Promise<ClickHouseClient> {
  fs.mkdirSync(cfg.embeddedPath, { recursive: true });
  let client: ClickHouseClient;
  try {
    // chdb types its Connection against its own copy of @clickhouse/client-common; the runtime
    // contract is the one createClient expects.
    // Loaded only here: server mode never needs the native engine.
    const { createChdbConnection } = await import('chdb/connection');
    const starter = await backupsAllowed(cfg.embeddedPath);
    const connection = createChdbConnection({ path: cfg.embeddedPath }) as unknown as NodeClickHouseClientConfigOptions['connection'];
    starter.close();
    client = createClient({ connection, ...clientLog(log) });
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    // chdb is an optional dependency: the image installs without it (server mode never loads it).
    if ((err as { code?: unknown }).code === 'ERR_MODULE_NOT_FOUND' && /\bchdb\b/.test(message)) {
      throw new StoreError('the embedded engine (npm package chdb) is not installed: set CLICKHOUSE_URL or install it', { cause: err });
    }
    if (/Cannot lock file/i.test(message)) {
      throw new StoreError(
        `the embedded data folder ${cfg.embeddedPath} is in use by another process ` +
          '(one process owns one folder): stop that process, use another DATA_DIR, or set CLICKHOUSE_URL',
        { cause: err },
      );
    }
    throw new StoreError(`cannot open the embedded ClickHouse at ${cfg.embeddedPath}: ${message}`, { cause: err });
  }
  // The embedded session is stateful: USE and SET persist for every later statement.
  await guard(
    'open',
    async () => {
      await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${cfg.database}` });
      await client.command({ query: `USE ${cfg.database}` });
      for (const [k, v] of Object.entries(sessionSettings)) {
        await client.command({ query: `SET ${k} = ${typeof v === 'string' ? `'${v.replace(/'/g, "''")}'` : String(v)}` });
      }
    },
    metrics,
  );
  return client;
}

/** A client of the ClickHouse server at `cfg.url`, its database created if missing. */
export async function openServerClient(cfg: StoreConfig, log?: Logger, metrics?: StatementMetrics): Promise<ClickHouseClient> {
  // The socket's idle timeout must not fire before a statement's own limit does.
  const requestTimeout = Math.max(60_000, (cfg.queryTimeoutMs ?? 0) + 10 * ABORT_GRACE_MS);
  const common = { url: cfg.url, username: cfg.user, password: cfg.password, request_timeout: requestTimeout, ...clientLog(log) };
  const bootstrap = createClient(common);
  try {
    await guard('open', () => bootstrap.command({ query: `CREATE DATABASE IF NOT EXISTS ${cfg.database}` }), metrics);
  } finally {
    await bootstrap.close();
  }
  return createClient({ ...common, database: cfg.database, clickhouse_settings: sessionSettings });
}
