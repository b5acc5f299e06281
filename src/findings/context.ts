import type { Store } from '../storage/gateway.js';
import type { KeyedTables } from '../storage/layout.js';
import type { ContextRow, StoredFinding } from './rows.js';

/**
 * What a findings page shows besides a finding's own row (SPEC §6.1): its latest event, its issue
 * and its target, kept by key in the tables of sql/0012. Read one of two ways, as the store's
 * keyed tables allow (src/storage/layout.ts):
 *
 * - JOINED into the page's statement, where a join looks each row's keys up directly (the single
 *   layout's EmbeddedRocksDB tables): contextColumns() and contextJoins();
 * - BY KEYS after the page's rows, in a statement of its own (contextByKeys): the cluster layout's
 *   tables are MergeTrees, where a join reads the keys' latest versions first, and a statement
 *   naming its page's keys through a subquery runs that subquery again for every table (measured at
 *   100k: each such join added about 3 ms to a 9 ms page). The three lookups are one UNION ALL
 *   statement with the keys bound, joined to the rows here.
 *
 * A key without a value reads as empty either way, so a finding without a latest event reads the
 * nil UUID as its source (withContext in rows.ts tells it apart).
 */

type ContextColumn = Exclude<keyof ContextRow, keyof StoredFinding>;

interface ContextTable {
  /** The alias of the table in the page's statement. */
  alias: string;
  table: string;
  key: string;
  /** The row's column holding the key, and the bound array of the keys in contextByKeys. */
  rowKey: 'id' | 'issue_id' | 'target_id';
  param: string;
  /** Each column the page reads: its name in the row, its expression over the table's columns (`$` their prefix), its empty value. */
  columns: [ContextColumn, string, string][];
}

const NIL = "toUUID('00000000-0000-0000-0000-000000000000')";

const TABLES: ContextTable[] = [
  {
    alias: 'e',
    table: 'finding_latest_events',
    key: 'finding_id',
    rowKey: 'id',
    param: 'contextFindings',
    columns: [
      ['latest_details', '$details', "''"],
      ['latest_impact_details', '$impact_details', "''"],
      ['latest_resources', '$resources', "''"],
      ['latest_affected_resource_string', '$affected_resource_string', "''"],
      ['latest_source_id', '$source_id', NIL],
      ['latest_source_name', '$source_name', "''"],
      ['latest_component', '$component', "''"],
      ['latest_instance', '$check_id', "''"],
      ['latest_options', '$options', "''"],
      ['latest_source_epoch', 'toUInt32($time)', 'toUInt32(0)'],
    ],
  },
  {
    alias: 'i',
    table: 'issue_objects',
    key: 'id',
    rowKey: 'issue_id',
    param: 'contextIssues',
    columns: [
      ['issue_summary', '$summary', "''"],
      ['issue_cwe_id', '$cwe_id', 'toUInt32(0)'],
      ['issue_description', '$description', "''"],
      ['issue_recommendations', '$recommendations', '[]'],
      ['issue_reference_links', '$reference_links', '[]'],
      ['issue_labels', '$labels', '[]'],
    ],
  },
  {
    alias: 't',
    table: 'target_objects',
    key: 'id',
    rowKey: 'target_id',
    param: 'contextTargets',
    columns: [
      ['target_identifier', '$identifier', "''"],
      ['target_team_ids', '$teams', '[]'],
    ],
  },
];

/** JOINED: the context columns of a statement whose rows are `f` and whose joins are contextJoins(). */
export const contextColumns = TABLES.flatMap((t) => t.columns.map(([name, expr]) => `${expr.replace('$', `${t.alias}.`)} AS ${name}`)).join(
  ',\n       ',
);

/** JOINED: the joins of the context tables to the rows `f`, for the keys `keys` (SQL sets) holds. */
export const contextJoins = (keyed: KeyedTables, keys: Record<ContextTable['rowKey'], string>) =>
  TABLES.map((t) => `LEFT JOIN ${keyed.byKeys(t.table, t.key, keys[t.rowKey])} AS ${t.alias} ON ${t.alias}.${t.key} = f.${t.rowKey}`).join(
    '\n   ',
  );

/**
 * BY KEYS: one row per value found, tagged with its table's alias and key, every other table's
 * columns empty (a UNION ALL has one set of columns).
 */
const contextByKeys = (keyed: KeyedTables) =>
  `${TABLES.map(
    (t) => `SELECT '${t.alias}' AS context_of, toString(${t.key}) AS context_key,
       ${TABLES.flatMap((u) => u.columns.map(([name, expr, empty]) => `${u === t ? expr.replace('$', '') : empty} AS ${name}`)).join(', ')}
FROM ${keyed.latest(t.table)}
WHERE ${t.key} IN {${t.param}:Array(UUID)}`,
  ).join('\nUNION ALL\n')}
SETTINGS max_threads = 1`;

type ContextOnly = Pick<ContextRow, ContextColumn> & { context_of: string; context_key: string };

/** The JSON value of an empty value above. */
const emptyValue = (sql: string) => (sql === NIL ? '00000000-0000-0000-0000-000000000000' : sql === "''" ? '' : sql === '[]' ? [] : 0);

/** Every context column empty: the row of a key without values, as the joins read it. */
const EMPTY = Object.fromEntries(TABLES.flatMap((t) => t.columns.map(([name, , empty]) => [name, emptyValue(empty)])));

/**
 * The rows with their context: as they are where their statement joined it (`joined`), else read
 * by their keys (BY KEYS above). Arrays in the empty values are shared: rows are read, not changed.
 */
export async function withTheirContext<R extends StoredFinding>(store: Store, rows: R[], joined: boolean): Promise<(R & ContextRow)[]> {
  if (joined || rows.length === 0) return rows as (R & ContextRow)[];
  const params = Object.fromEntries(TABLES.map((t) => [t.param, [...new Set(rows.map((r) => r[t.rowKey]))]]));
  const found = new Map<string, ContextOnly>();
  for (const c of await store.query<ContextOnly>(contextByKeys(store.keyed), params)) found.set(`${c.context_of}:${c.context_key}`, c);
  return rows.map((r) => {
    const context: Record<string, unknown> = { ...EMPTY };
    for (const t of TABLES) {
      const c = found.get(`${t.alias}:${r[t.rowKey]}`);
      if (c) for (const [name] of t.columns) context[name] = c[name];
    }
    return { ...r, ...(context as Pick<ContextRow, ContextColumn>) };
  });
}
