import type { ClickHouseClient } from '@clickhouse/client';
import type { StoreConfig, StoreLayout } from '../config.js';
import type { Logger } from '../log.js';
import { TimeSlices } from '../time-slices.js';
import { openEmbeddedClient, openServerClient } from './clients.js';
import { type KeyedTables, keyedTables } from './layout.js';
import { guard, type StatementMetrics, StoreError } from './store-errors.js';
import { type Exec, timeLimits } from './time-limits.js';

/**
 * The storage gateway: the store every other module uses, and the only one holding a ClickHouse
 * client (opened by src/storage/clients.ts: the embedded engine of chdb by default, a ClickHouse
 * server when CLICKHOUSE_URL is set). The SQL is the same in both modes, and nothing outside
 * src/storage knows which one is in use. Statement time limits: src/storage/time-limits.ts.
 *
 * Every value reaches ClickHouse as a bound `{name:Type}` parameter; callers never splice values
 * into SQL text.
 *
 * A ClickHouse habit every query here must respect: an alias is visible in the whole query,
 * WHERE included, so `toString(id) AS id ... WHERE id IN {ids}` filters on the alias. Aliases
 * never reuse the name of a column the query reads (UUIDs and enums already render as strings).
 */

export type QueryParams = Record<string, unknown>;

export interface StatementOptions {
  /**
   * This statement's time limit in milliseconds instead of the store's (`StoreConfig.queryTimeoutMs`):
   * a longer one, or 0 for none (migrations, OPTIMIZE and other maintenance).
   */
  timeoutMs?: number;
}

export interface Store {
  readonly mode: 'embedded' | 'server';
  /**
   * Whether this process is the only one writing the data (the embedded engine's data folder): what
   * it learns of the store stays true until it writes. A server's data other processes change too.
   */
  readonly exclusive: boolean;
  readonly database: string;
  /** CLICKHOUSE_CLUSTER (server mode): migrations run ON CLUSTER with replicated engines (src/storage/cluster.ts). */
  readonly cluster?: string;
  /** CLICKHOUSE_LAYOUT: the tables migrations create (src/storage/migrate.ts); read only in src/storage. */
  readonly layout: StoreLayout;
  /** How statements read the key-value tables in this layout (src/storage/layout.ts). */
  readonly keyed: KeyedTables;
  query<T>(sql: string, params?: QueryParams, opts?: StatementOptions): Promise<T[]>;
  /**
   * Rows as arrays of field texts (TabSeparated, unescaped): for large results of plain fields,
   * which cost a fraction of JSON rows to format, transfer and parse.
   */
  queryFields(sql: string, params?: QueryParams): Promise<string[][]>;
  command(sql: string, params?: QueryParams, opts?: StatementOptions): Promise<void>;
  insert(table: string, rows: readonly object[], opts?: StatementOptions): Promise<void>;
  ping(): Promise<boolean>;
  close(): Promise<void>;
  /**
   * Milliseconds the engine has spent on this view's statements in this process (the prioritized
   * view's: the worker's): read before and after a batch, what the batch cost the engine. Server
   * mode: the statements' round trips.
   */
  engineMs(): number;
  /**
   * The same store whose statements go before the ordinary ones waiting for the embedded engine
   * (the ingest worker's: API load must not starve ingestion); the store itself in server mode.
   */
  prioritized(): Store;
}

/**
 * Whether this process alone reads and writes the store's data (the embedded engine's folder):
 * then its own locks suffice and its snapshots are its to take. Against a server, other processes
 * write too. The one question outside src/storage may ask about the mode.
 */
export const ownsItsData = (store: Pick<Store, 'exclusive'>): boolean => store.exclusive;

/** What the start's log says of the store: its mode and database (and data folder, when it owns one). */
export const storeDescription = (store: Pick<Store, 'mode' | 'database' | 'exclusive'>, embeddedPath: string) => ({
  mode: store.mode,
  database: store.database,
  ...(ownsItsData(store) ? { path: embeddedPath } : {}),
});

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

/** What a store and its prioritized view share: the client and the engine's turns. */
interface Engine {
  client: ClickHouseClient;
  runner: ReturnType<typeof timeLimits>;
  closed: boolean;
  metrics: StatementMetrics | undefined;
}

/** The statements of one view: `urgent` ones go before the ordinary ones waiting for the engine. */
function statements(engine: Engine, urgent: boolean): Pick<Store, 'query' | 'queryFields' | 'command' | 'insert' | 'ping'> {
  const { client, metrics } = engine;
  const limited = <T>(ms: number | undefined, work: (exec: Exec) => Promise<T>) => engine.runner(ms, work, urgent);
  return {
    query: <T>(sql: string, params?: QueryParams, opts?: StatementOptions) =>
      guard(
        'query',
        () =>
          limited(opts?.timeoutMs, async (exec) => {
            const rs = await exec((limits) => client.query({ query: sql, query_params: params, format: 'JSONEachRow', ...limits }));
            return rs.json<T>();
          }),
        metrics,
      ),
    queryFields: (sql, params) =>
      guard(
        'query',
        () =>
          limited(undefined, async (exec) => {
            const rs = await exec((limits) => client.query({ query: sql, query_params: params, format: 'TabSeparated', ...limits }));
            return readFields(rs.stream<unknown>());
          }),
        metrics,
        'fields',
      ),
    command: (sql, params, opts) =>
      guard(
        'command',
        () =>
          limited(opts?.timeoutMs, async (exec) => {
            await exec((limits) => client.command({ query: sql, query_params: params, ...limits }));
          }),
        metrics,
      ),
    insert: (table, rows, opts) =>
      guard(
        `insert into ${table}`,
        async () => {
          if (rows.length === 0) return;
          const statement = insertStatement(table, rows);
          await limited(opts?.timeoutMs, (exec) => exec((limits) => client.command({ query: statement, ...limits })));
        },
        metrics,
      ),
    ping: async () => {
      if (engine.closed) return false;
      try {
        await limited(undefined, async (exec) => {
          const rs = await exec((limits) => client.query({ query: 'SELECT 1 AS ok', format: 'JSONEachRow', ...limits }));
          await rs.json();
        });
        return true;
      } catch {
        return false;
      }
    },
  };
}

/**
 * A TabSeparated answer as rows of fields, line by line: the result set's text() decodes the whole
 * answer with a TextDecoder, about ten times slower than decoding each line's bytes. Large answers
 * are split in slices (src/time-slices.ts).
 */
async function readFields(stream: AsyncIterable<unknown>): Promise<string[][]> {
  const rows: string[][] = [];
  const slices = new TimeSlices();
  for await (const lines of stream) {
    for (const line of lines as { text: string }[]) {
      rows.push(fieldsOf(line.text));
      if (slices.due) await slices.turn();
    }
  }
  return rows;
}

function view(engine: Engine, base: Pick<Store, 'mode' | 'exclusive' | 'database' | 'layout' | 'keyed'>, urgent: boolean): Store {
  return {
    ...base,
    ...statements(engine, urgent),
    engineMs: () => engine.runner.engineMs(urgent),
    close: async () => {
      if (engine.closed) return;
      engine.closed = true;
      await engine.client.close();
    },
    // The store and its prioritized view share the client and the engine's turns.
    prioritized: () => view(engine, base, true),
  };
}

function wrap(
  client: ClickHouseClient,
  mode: Store['mode'],
  cfg: StoreConfig,
  layout: StoreLayout,
  metrics: StatementMetrics | undefined,
): Store {
  const engine: Engine = { client, runner: timeLimits(mode, cfg.queryTimeoutMs), closed: false, metrics };
  return view(engine, { mode, exclusive: mode === 'embedded', database: cfg.database, layout, keyed: keyedTables(layout) }, false);
}

/**
 * Opens the store described by the configuration (database name is validated by config).
 * `metrics`: the process's collectors that time and count its statements (the service's); none for tools.
 */
export async function openStore(cfg: StoreConfig, log?: Logger, metrics?: StatementMetrics): Promise<Store> {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(cfg.database)) throw new StoreError(`invalid database name ${JSON.stringify(cfg.database)}`);
  const layout = cfg.layout ?? (cfg.cluster ? 'cluster' : 'single');
  if (!cfg.url) return wrap(await openEmbeddedClient(cfg, log, metrics), 'embedded', cfg, layout, metrics);
  const store = wrap(await openServerClient(cfg, log, metrics), 'server', cfg, layout, metrics);
  return cfg.cluster ? { ...store, cluster: cfg.cluster } : store;
}
