import type { StoreLayout } from '../config.js';

/**
 * How statements read the key-value tables of sql/0012 and sql/0014 (finding_latest_events,
 * issue_objects, target_objects, finding_total_values) in the store's layout (CLICKHOUSE_LAYOUT).
 * Single: EmbeddedRocksDB tables, one value per key, joined by direct key lookups. Cluster: the
 * same tables as ReplacingMergeTree (src/storage/cluster.ts), where every write of a key is a
 * version until a merge, and a read takes the latest (FINAL: the last insert of a key wins, as a
 * RocksDB write does). Statements are written once with these fragments; nothing outside
 * src/storage knows the layout.
 */
export interface KeyedTables {
  /** The table read whole or filtered by its own WHERE: `t`, or `t FINAL` (so no alias can follow). */
  latest(table: string): string;
  /**
   * The table to join by `key`, for rows whose keys `keys` (an SQL set: a bound array or a subquery)
   * holds: the table itself (direct lookups), or the latest version of each of those keys.
   */
  byKeys(table: string, key: string, keys: string): string;
  /**
   * What follows FROM to read the latest row of each key that `keys` (an SQL set) holds: `t WHERE
   * key IN keys`, or `t FINAL PREWHERE key IN keys` (every version of a key has the key, so a filter
   * on it may run before FINAL; as PREWHERE, the other columns are read only where it passes).
   */
  lookup(table: string, key: string, keys: string): string;
  /** The SETTINGS that join byKeys() tables: direct lookups, or a hash join of the few rows read (one thread). */
  readonly joinSettings: string;
  /**
   * Whether a join looks each row's key up directly, at the cost of a key lookup (EmbeddedRocksDB).
   * Where it does not, a join reads the latest versions of its keys first: statements that join
   * these tables to rows they compute themselves should read those rows first and look their keys
   * up after them (src/findings/context.ts).
   */
  readonly directJoins: boolean;
}

export function keyedTables(layout: StoreLayout): KeyedTables {
  if (layout === 'single') {
    return {
      latest: (table) => table,
      byKeys: (table) => table,
      lookup: (table, key, keys) => `${table} WHERE ${key} IN ${keys}`,
      joinSettings: "join_algorithm = 'direct'",
      directJoins: true,
    };
  }
  return {
    latest: (table) => `${table} FINAL`,
    byKeys: (table, key, keys) => `(SELECT * FROM ${table} FINAL WHERE ${key} IN ${keys})`,
    lookup: (table, key, keys) => `${table} FINAL PREWHERE ${key} IN ${keys}`,
    // One thread: a lookup of a few keys gains nothing from more, and pays for setting them up.
    joinSettings: "join_algorithm = 'hash', max_threads = 1",
    directJoins: false,
  };
}
