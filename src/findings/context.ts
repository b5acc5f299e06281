import type { Store } from '../storage/gateway.js';
import type { KeyedTables } from '../storage/layout.js';
import type { ContextRow, StoredFinding } from './rows.js';

/**
 * What a findings page shows besides a finding's own row (SPEC §6.1): its latest event, its issue
 * and its target, kept by key in the tables of sql/0012. Read one of two ways, as the store's
 * keyed tables allow (src/storage/layout.ts):
 *
 * - JOINED into the page's statement, where a join looks each row's keys up directly (the single
 *   layout's EmbeddedRocksDB tables): contextColumns and contextJoins();
 * - BY KEYS after the page's rows, in a statement of its own (contextByKeys): the cluster layout's
 *   tables are MergeTrees, where a join reads the keys' latest versions first, and a statement
 *   naming its page's keys through a subquery runs that subquery again for every table (measured at
 *   100k: each such join added about 3 ms to a 9 ms page). The three lookups are one UNION ALL
 *   statement with the keys bound (with the list's kept total where the page asks for one), put
 *   together with the rows here (withTheirContext).
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
  /** Each column the page reads: its name in the row, its expression over the table's columns (`$` their prefix), its value for a missing key. */
  columns: [ContextColumn, string, ContextValue][];
}

type ContextValue = string | number | string[];
const NIL = '00000000-0000-0000-0000-000000000000';

const TABLES: ContextTable[] = [
  {
    alias: 'e',
    table: 'finding_latest_events',
    key: 'finding_id',
    rowKey: 'id',
    param: 'contextFindings',
    columns: [
      ['latest_details', '$details', ''],
      ['latest_impact_details', '$impact_details', ''],
      ['latest_resources', '$resources', ''],
      ['latest_affected_resource_string', '$affected_resource_string', ''],
      ['latest_source_id', '$source_id', NIL],
      ['latest_source_name', '$source_name', ''],
      ['latest_component', '$component', ''],
      ['latest_instance', '$check_id', ''],
      ['latest_options', '$options', ''],
      ['latest_source_epoch', 'toUInt32($time)', 0],
    ],
  },
  {
    alias: 'i',
    table: 'issue_objects',
    key: 'id',
    rowKey: 'issue_id',
    param: 'contextIssues',
    columns: [
      ['issue_summary', '$summary', ''],
      ['issue_cwe_id', '$cwe_id', 0],
      ['issue_description', '$description', ''],
      ['issue_recommendations', '$recommendations', []],
      ['issue_reference_links', '$reference_links', []],
      ['issue_labels', '$labels', []],
    ],
  },
  {
    alias: 't',
    table: 'target_objects',
    key: 'id',
    rowKey: 'target_id',
    param: 'contextTargets',
    columns: [
      ['target_identifier', '$identifier', ''],
      ['target_team_ids', '$teams', []],
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
 * BY KEYS: one row per key found, tagged with its table's alias and key, its values as one JSON
 * array (the tables' columns differ, a UNION ALL has one set). Measured at 100k: 6.5 ms for a
 * team page's keys, against 7.8 ms with every table's columns in every branch and 9.8 ms joined.
 */
const contextByKeys = (keyed: KeyedTables, total: KeptTotal | undefined) =>
  `${[
    ...TABLES.map(
      (t) => `SELECT '${t.alias}' AS context_of, toString(${t.key}) AS context_key,
       toJSONString(tuple(${t.columns.map(([, expr]) => expr.replace('$', '')).join(', ')})) AS context_values
FROM ${keyed.lookup(t.table, t.key, `{${t.param}:Array(UUID)}`)}`,
    ),
    ...(total
      ? [
          `SELECT 'n', scope, toJSONString(tuple(${total.sql.replace(/\bn\./g, '')}))
FROM ${keyed.lookup('finding_total_values', 'scope', '({totalScope:String})')}`,
        ]
      : []),
  ].join('\nUNION ALL\n')}
SETTINGS max_threads = 1`;

/** Every context column empty: the row of a key without values, as the joins read it. */
const EMPTY = Object.fromEntries(TABLES.flatMap((t) => t.columns.map(([name, , empty]) => [name, empty])));

/** A list's kept total (src/findings/page.ts): its expression over the finding_total_values row `n`, and its scope. */
export interface KeptTotal {
  sql: string;
  params: { totalScope: string };
}

/**
 * The rows with their context: as they are where their statement joined it (`joined`), else read
 * by their keys (BY KEYS above), with the kept `total` where one is asked for (a fourth lookup of
 * the same statement; 0.7 ms less than a scalar subquery in the rows' statement at 100k). Arrays in
 * the empty values are shared: rows are read, not changed.
 */
export async function withTheirContext<R extends StoredFinding>(
  store: Store,
  rows: R[],
  joined: boolean,
  total?: KeptTotal,
): Promise<{ rows: (R & ContextRow)[]; total?: number }> {
  if (joined || rows.length === 0) return { rows: rows as (R & ContextRow)[] };
  const params = Object.fromEntries(TABLES.map((t) => [t.param, [...new Set(rows.map((r) => r[t.rowKey]))]]));
  const found = new Map<string, ContextValue[]>();
  const statement = contextByKeys(store.keyed, total);
  for (const c of await store.query<{ context_of: string; context_key: string; context_values: string }>(statement, {
    ...params,
    ...total?.params,
  })) {
    found.set(`${c.context_of}:${c.context_key}`, JSON.parse(c.context_values) as ContextValue[]);
  }
  const kept = total ? found.get(`n:${total.params.totalScope}`)?.[0] : undefined;
  return { rows: withFound(rows, found), ...(kept !== undefined ? { total: Number(kept) } : {}) };
}

function withFound<R extends StoredFinding>(rows: R[], found: Map<string, ContextValue[]>): (R & ContextRow)[] {
  return rows.map((r) => {
    const context: Record<string, unknown> = { ...EMPTY };
    for (const t of TABLES) {
      const values = found.get(`${t.alias}:${r[t.rowKey]}`);
      if (values) for (const [i, [name]] of t.columns.entries()) context[name] = values[i];
    }
    return { ...r, ...(context as Pick<ContextRow, ContextColumn>) };
  });
}
