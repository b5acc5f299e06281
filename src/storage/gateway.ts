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
import { TimeSlices } from '../time-slices.js';
import { storeQueryDuration } from '../observability/metrics.js';
import type { Logger } from '../log.js';

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

export interface StatementOptions {
  /**
   * This statement's time limit in milliseconds instead of the store's (`StoreConfig.queryTimeoutMs`):
   * a longer one, or 0 for none (migrations, OPTIMIZE and other maintenance).
   */
  timeoutMs?: number;
}

export interface Store {
  readonly mode: 'embedded' | 'server';
  readonly database: string;
  /** CLICKHOUSE_CLUSTER (server mode): migrations run ON CLUSTER with replicated engines (src/storage/cluster.ts). */
  readonly cluster?: string;
  query<T>(sql: string, params?: QueryParams): Promise<T[]>;
  /**
   * Rows as arrays of field texts (TabSeparated, unescaped): for large results of plain fields,
   * which cost a fraction of JSON rows to format, transfer and parse.
   */
  queryFields(sql: string, params?: QueryParams): Promise<string[][]>;
  command(sql: string, params?: QueryParams, opts?: StatementOptions): Promise<void>;
  insert(table: string, rows: readonly object[]): Promise<void>;
  ping(): Promise<boolean>;
  close(): Promise<void>;
  /**
   * The same store whose statements go before the ordinary ones waiting for the embedded engine
   * (the ingest worker's: API load must not starve ingestion); the store itself in server mode.
   */
  prioritized(): Store;
}

/** A failure of the store itself (unreachable, engine error): callers treat it as transient. */
export class StoreError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'StoreError';
  }
}

/** A statement ran past its time limit and was cancelled (SPEC §5.6): the database API's 503. */
export class QueryTimeout extends StoreError {
  constructor(
    readonly limitMs: number,
    options?: { cause?: unknown },
  ) {
    super(`statement cancelled at its time limit of ${limitMs} ms`, options);
    this.name = 'QueryTimeout';
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

/** Runs one statement: its failure becomes a StoreError, its time goes to the metrics by kind. */
async function guard<T>(what: string, run: () => Promise<T>, kind = what.split(' ')[0]!): Promise<T> {
  const timed = storeQueryDuration.startTimer({ kind });
  try {
    return await run();
  } catch (err) {
    if (err instanceof StoreError) throw err;
    const message = err instanceof Error ? err.message : String(err);
    throw new StoreError(`${what} failed: ${message}`, { cause: err });
  } finally {
    timed();
  }
}

/**
 * Statement time limits (SPEC §5.6: `StoreConfig.queryTimeoutMs`, or a statement's own). What
 * each mechanism covers:
 *
 * - The engine's `max_execution_time` (seconds, fractional), sent with every statement as what is
 *   left of its budget when the engine gets it. The engine checks it between blocks of work and
 *   stops with TIMEOUT_EXCEEDED, which frees it: this is what cancels a long statement, in both
 *   modes. A server takes it per request; the embedded adapter turns it into a `SET` before the
 *   statement, which stays in the session, so once any statement carried a limit every later one
 *   carries its own (0: none).
 * - Server mode: a client-side abort (`abort_signal`) shortly after the deadline, for what the
 *   engine does not count: a server that does not answer, the transfer of its answer, work that
 *   does not check the clock. The caller hears at the deadline.
 * - Embedded mode: the engine runs one statement at a time per connection. chdb's abort cannot
 *   interrupt the engine, it only settles the call early; and chdb dispatches a statement without
 *   parameters at once, so one aborted while queued behind a slow statement would still run after
 *   it, keeping the engine busy for nobody (chdb skips aborted statements only in its own queue
 *   of parameterised ones). So statements take turns here (Turns) and are not given chdb's
 *   abort: the caller stops waiting at the deadline, a statement whose time ran out while it
 *   waited never reaches the engine, and the next one starts when the engine is really free
 *   (within the engine's limit of the one before).
 */

/** Past the deadline, the engine has this long to report its own timeout before the call is aborted. */
const ABORT_GRACE_MS = 100;

interface Limits {
  clickhouse_settings?: ClickHouseSettings;
  abort_signal?: AbortSignal;
}

/** Hands one client call the settings and signal of its statement's time limit. */
type Exec = <R>(call: (limits: Limits) => Promise<R>) => Promise<R>;

/**
 * The embedded engine's statements, one after the other (see above), in two lanes: a statement of
 * the ingest worker (a `prioritized()` store) goes before the ordinary ones waiting, so that API
 * load, which can keep several statements queued at any moment, never starves ingestion; between
 * two statements of a batch (its work in JavaScript) the queued API statements have the engine.
 */
class Turns {
  #busy = false;
  readonly #lanes: [(() => void)[], (() => void)[]] = [[], []];

  /**
   * Starts `start` when the engine is free and no statement of a higher lane waits, unless `signal`
   * fired first; the answer settles when `start`'s does or when `signal` fires.
   */
  take<R>(signal: AbortSignal | undefined, start: () => Promise<R>, urgent = false): Promise<R> {
    return new Promise<R>((resolve, reject) => {
      let settled = false;
      const settle = (done: () => void) => {
        signal?.removeEventListener('abort', giveUp);
        if (!settled) {
          settled = true;
          done();
        }
      };
      const giveUp = () => settle(() => reject(new Error('time limit reached before the engine answered')));
      signal?.addEventListener('abort', giveUp, { once: true });
      const run = () => {
        // Its time ran out while it waited: it never reaches the engine.
        if (signal?.aborted) return this.#next();
        Promise.resolve()
          .then(start)
          .then(
            (value) => settle(() => resolve(value)),
            (err: unknown) => settle(() => reject(err)),
          )
          .finally(() => this.#next());
      };
      this.#lanes[urgent ? 0 : 1].push(run);
      if (!this.#busy) this.#next();
    });
  }

  #next(): void {
    const run = this.#lanes[0].shift() ?? this.#lanes[1].shift();
    this.#busy = run !== undefined;
    run?.();
  }
}

/** TIMEOUT_EXCEEDED, or TOO_SLOW when the engine projects the statement past its limit. */
function engineTimeout(err: unknown): boolean {
  const { code, type } = err as { code?: unknown; type?: unknown };
  return code === '159' || code === '160' || type === 'TIMEOUT_EXCEEDED' || type === 'TOO_SLOW';
}

/**
 * The time limit runner of one store: `limited(ms, work)` runs `work` under a limit of `ms`
 * (undefined: the store's; 0: none), `work` handing each client call to `exec`.
 */
function timeLimits(mode: Store['mode'], storeMs: number | undefined) {
  const turns = mode === 'embedded' ? new Turns() : undefined;
  // Whether a statement carried a limit yet: from then on the embedded session holds one.
  let sent = storeMs !== undefined;
  return async <T>(ms: number | undefined, work: (exec: Exec) => Promise<T>, urgent = false): Promise<T> => {
    const budget = ms ?? storeMs ?? 0;
    if (budget === 0) {
      const limits: Limits = sent ? { clickhouse_settings: { max_execution_time: 0 } } : {};
      return work((call) => (turns ? turns.take(undefined, () => call(limits), urgent) : call(limits)));
    }
    sent = true;
    const deadline = performance.now() + budget;
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(), budget + ABORT_GRACE_MS);
    const start = <R>(call: (limits: Limits) => Promise<R>): Promise<R> => {
      const left = Math.ceil(deadline - performance.now());
      if (left <= 0) return Promise.reject(new QueryTimeout(budget));
      const settings = { max_execution_time: left / 1000 };
      return call(turns ? { clickhouse_settings: settings } : { clickhouse_settings: settings, abort_signal: controller.signal });
    };
    try {
      return await work((call) => (turns ? turns.take(controller.signal, () => start(call), urgent) : start(call)));
    } catch (err) {
      if (err instanceof QueryTimeout) throw err;
      if (controller.signal.aborted || engineTimeout(err)) throw new QueryTimeout(budget, { cause: err });
      throw err;
    } finally {
      clearTimeout(timer);
    }
  };
}

function wrap(client: ClickHouseClient, mode: Store['mode'], database: string, queryTimeoutMs: number | undefined): Store {
  let closed = false;
  const runner = timeLimits(mode, queryTimeoutMs);
  // The store and its prioritized view share the client and the engine's turns.
  const view = (urgent: boolean): Store => {
    const limited = <T>(ms: number | undefined, work: (exec: Exec) => Promise<T>) => runner(ms, work, urgent);
    return {
      mode,
      database,
      query: <T>(sql: string, params?: QueryParams) =>
        guard('query', () =>
          limited(undefined, async (exec) => {
            const rs = await exec((limits) => client.query({ query: sql, query_params: params, format: 'JSONEachRow', ...limits }));
            return rs.json<T>();
          }),
        ),
      queryFields: (sql, params) =>
        guard(
          'query',
          () =>
            limited(undefined, async (exec) => {
              const rs = await exec((limits) => client.query({ query: sql, query_params: params, format: 'TabSeparated', ...limits }));
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
          'fields',
        ),
      command: (sql, params, opts) =>
        guard('command', () =>
          limited(opts?.timeoutMs, async (exec) => {
            await exec((limits) => client.command({ query: sql, query_params: params, ...limits }));
          }),
        ),
      insert: (table, rows) =>
        guard(`insert into ${table}`, async () => {
          if (rows.length === 0) return;
          const statement = insertStatement(table, rows);
          await limited(undefined, (exec) => exec((limits) => client.command({ query: statement, ...limits })));
        }),
      ping: async () => {
        if (closed) return false;
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
      close: async () => {
        if (closed) return;
        closed = true;
        await client.close();
      },
      prioritized: () => view(true),
    };
  };
  return view(false);
}

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

async function openEmbedded(cfg: StoreConfig, log?: Logger): Promise<Store> {
  fs.mkdirSync(cfg.embeddedPath, { recursive: true });
  let client: ClickHouseClient;
  try {
    // chdb types its Connection against its own copy of @clickhouse/client-common; the runtime
    // contract is the one createClient expects.
    // Loaded only here: server mode never needs the native engine.
    const { createChdbConnection } = await import('chdb/connection');
    const connection = createChdbConnection({ path: cfg.embeddedPath }) as unknown as NodeClickHouseClientConfigOptions['connection'];
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
  await guard('open', async () => {
    await client.command({ query: `CREATE DATABASE IF NOT EXISTS ${cfg.database}` });
    await client.command({ query: `USE ${cfg.database}` });
    for (const [k, v] of Object.entries(sessionSettings)) {
      await client.command({ query: `SET ${k} = ${typeof v === 'string' ? `'${v.replace(/'/g, "''")}'` : String(v)}` });
    }
  });
  return wrap(client, 'embedded', cfg.database, cfg.queryTimeoutMs);
}

async function openServer(cfg: StoreConfig, log?: Logger): Promise<Store> {
  // The socket's idle timeout must not fire before a statement's own limit does.
  const requestTimeout = Math.max(60_000, (cfg.queryTimeoutMs ?? 0) + 10 * ABORT_GRACE_MS);
  const common = { url: cfg.url, username: cfg.user, password: cfg.password, request_timeout: requestTimeout, ...clientLog(log) };
  const bootstrap = createClient(common);
  try {
    await guard('open', () => bootstrap.command({ query: `CREATE DATABASE IF NOT EXISTS ${cfg.database}` }));
  } finally {
    await bootstrap.close();
  }
  const client = createClient({ ...common, database: cfg.database, clickhouse_settings: sessionSettings });
  const store = wrap(client, 'server', cfg.database, cfg.queryTimeoutMs);
  return cfg.cluster ? { ...store, cluster: cfg.cluster } : store;
}

/** Opens the store described by the configuration (database name is validated by config). */
export function openStore(cfg: StoreConfig, log?: Logger): Promise<Store> {
  if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(cfg.database)) {
    return Promise.reject(new StoreError(`invalid database name ${JSON.stringify(cfg.database)}`));
  }
  return cfg.url ? openServer(cfg, log) : openEmbedded(cfg, log);
}
