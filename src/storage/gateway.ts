import fs from 'node:fs';
import { createClient, type ClickHouseClient, type ClickHouseSettings } from '@clickhouse/client';
import type { NodeClickHouseClientConfigOptions } from '@clickhouse/client/dist/config.js';
import type { StoreConfig } from '../config.js';
import { TimeSlices } from '../time-slices.js';

/**
 * The storage gateway: the one module that owns a ClickHouse client. Embedded engine (chdb)
 * by default, a ClickHouse server when CLICKHOUSE_URL is set; the SQL is the same in both modes
 * and nothing outside this file knows which one is in use.
 *
 * Every value reaches ClickHouse as a bound `{name:Type}` parameter; callers never splice values
 * into SQL text.
 *
 * A ClickHouse habit every query here must respect: an alias is visible in the whole query,
 * WHERE included, so `toString(id) AS id ... WHERE id IN {ids}` filters on the alias. Aliases
 * never reuse the name of a column the query reads (UUIDs and enums already render as strings).
 */

export type QueryParams = Record<string, unknown>;

export interface Store {
  readonly mode: 'embedded' | 'server';
  readonly database: string;
  query<T>(sql: string, params?: QueryParams): Promise<T[]>;
  /**
   * Rows as arrays of field texts (TabSeparated, unescaped): for large results of plain fields,
   * which cost a fraction of JSON rows to format, transfer and parse (80,000 findings of a batch:
   * about 160 ms against 450).
   */
  queryFields(sql: string, params?: QueryParams): Promise<string[][]>;
  command(sql: string, params?: QueryParams): Promise<void>;
  insert(table: string, rows: readonly object[]): Promise<void>;
  ping(): Promise<boolean>;
  close(): Promise<void>;
}

/** A failure of the store itself (unreachable, engine error): callers treat it as transient. */
export class StoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
  }
}

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
};

/**
 * One INSERT statement with its rows inline, as JSONColumns (one array per column, in the column
 * order of the first row). Building the text once is much cheaper than the client's row stream,
 * which the embedded adapter concatenates back into one string anyway, and the columnar form
 * allocates one array per column instead of one per row. Named tuples are written as arrays.
 */
function insertStatement(table: string, rows: readonly object[]): string {
  const columns = Object.keys(rows[0]!);
  const data: Record<string, unknown[]> = {};
  for (const c of columns) {
    const values = new Array<unknown>(rows.length);
    for (let i = 0; i < rows.length; i++) values[i] = (rows[i] as Record<string, unknown>)[c];
    data[c] = values;
  }
  return `INSERT INTO ${table} (${columns.join(', ')}) FORMAT JSONColumns\n${JSON.stringify(data)}`;
}

const TSV_ESCAPES: Record<string, string> = { b: '\b', f: '\f', r: '\r', n: '\n', t: '\t', '0': '\0' };
const unescapeField = (field: string) => (field.includes('\\') ? field.replace(/\\(.)/g, (_, c: string) => TSV_ESCAPES[c] ?? c) : field);

/** A TabSeparated line as its unescaped fields. */
const fieldsOf = (line: string) => line.split('\t').map(unescapeField);

async function guard<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof StoreError) throw err;
    const message = err instanceof Error ? err.message : String(err);
    throw new StoreError(`${what} failed: ${message}`, { cause: err });
  }
}

function wrap(client: ClickHouseClient, mode: Store['mode'], database: string): Store {
  let closed = false;
  return {
    mode,
    database,
    query: <T>(sql: string, params?: QueryParams) =>
      guard('query', async () => {
        const rs = await client.query({ query: sql, query_params: params, format: 'JSONEachRow' });
        return rs.json<T>();
      }),
    queryFields: (sql, params) =>
      guard('query', async () => {
        const rs = await client.query({ query: sql, query_params: params, format: 'TabSeparated' });
        // Line by line: the result set's text() decodes the whole answer with a TextDecoder, about
        // ten times slower than decoding each line's bytes.
        // Large answers are split in slices (src/time-slices.ts).
        const rows: string[][] = [];
        const slices = new TimeSlices();
        for await (const lines of rs.stream<unknown>()) {
          for (const line of lines as { text: string }[]) {
            rows.push(fieldsOf(line.text));
            if (slices.due) await slices.turn();
          }
        }
        return rows;
      }),
    command: (sql, params) =>
      guard('command', async () => {
        await client.command({ query: sql, query_params: params });
      }),
    insert: (table, rows) =>
      guard(`insert into ${table}`, async () => {
        if (rows.length === 0) return;
        await client.command({ query: insertStatement(table, rows) });
      }),
    ping: async () => {
      if (closed) return false;
      try {
        const rs = await client.query({ query: 'SELECT 1 AS ok', format: 'JSONEachRow' });
        await rs.json();
        return true;
      } catch {
        return false;
      }
    },
    close: async () => {
      if (closed) return;
      closed = true;
      await client.close();
    },
  };
}

async function openEmbedded(cfg: StoreConfig): Promise<Store> {
  fs.mkdirSync(cfg.embeddedPath, { recursive: true });
  let client: ClickHouseClient;
  try {
    // chdb types its Connection against its own copy of @clickhouse/client-common; the runtime
    // contract is the one createClient expects.
    // Loaded only here: server mode never needs the native engine.
    const { createChdbConnection } = await import('chdb/connection');
    const connection = createChdbConnection({ path: cfg.embeddedPath }) as unknown as NodeClickHouseClientConfigOptions['connection'];
    client = createClient({ connection });
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
  await guard('open', async () => {
    await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${cfg.database}` });
    await client.command({ query: `USE ${cfg.database}` });
    for (const [k, v] of Object.entries(sessionSettings)) {
      await client.command({ query: `SET ${k} = ${typeof v === 'string' ? `'${v.replace(/'/g, "''")}'` : String(v)}` });
    }
  });
  return wrap(client, 'embedded', cfg.database);
}

async function openServer(cfg: StoreConfig): Promise<Store> {
  const common = { url: cfg.url, username: cfg.user, password: cfg.password, request_timeout: 60_000 };
  const bootstrap = createClient(common);
  try {
    await guard('open', () => bootstrap.command({ query: `CREATE DATABASE IF NOT EXISTS ${cfg.database}` }));
  } finally {
    await bootstrap.close();
  }
  const client = createClient({ ...common, database: cfg.database, clickhouse_settings: sessionSettings });
  return wrap(client, 'server', cfg.database);
}

/** Opens the store described by the configuration (database name is validated by config). */
export function openStore(cfg: StoreConfig): Promise<Store> {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(cfg.database)) {
    return Promise.reject(new StoreError(`invalid database name ${JSON.stringify(cfg.database)}`));
  }
  return cfg.url ? openServer(cfg) : openEmbedded(cfg);
}
