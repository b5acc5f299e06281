import { splitStatements } from './statements.js';

/**
 * CLICKHOUSE_CLUSTER (server mode only; docs/SCALING.md): the migrations of sql/ as a ClickHouse
 * cluster of one shard and several replicas runs them. A pure text transformation, statement by
 * statement:
 *
 * - CREATE DATABASE / TABLE / VIEW / MATERIALIZED VIEW and ALTER / OPTIMIZE / DROP / TRUNCATE /
 *   RENAME TABLE get `ON CLUSTER <name>` after the object's name: the DDL runs on every node.
 * - A MergeTree-family engine becomes its Replicated counterpart with a ZooKeeper path per shard,
 *   database and table, keeping its parameters:
 *   `ReplacingMergeTree(version)` →
 *   `ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/findings', '{replica}', version)`.
 * - EmbeddedRocksDB tables are node-local: a replicated insert never reaches them on the other
 *   replicas, and the service writes some of them directly (issue_objects, target_objects,
 *   finding_total_values), so they could never be rebuilt once per node and stay right. In a
 *   cluster each becomes a ReplicatedReplacingMergeTree sorted by its primary key: a later write of
 *   a key replaces the earlier one on merge (block numbers of a replicated table are ordered by
 *   ZooKeeper, so "later" is the same on every replica), which is the RocksDB table's semantics
 *   once reads take FINAL: every read of them goes through the store's layout fragments
 *   (src/storage/layout.ts; docs/SCALING.md, "Node-local tables").
 * - Null tables stay Null (a materialized view fires on the replica that received the insert and
 *   writes into a replicated table); plain views stay views.
 * - INSERT … SELECT backfills run once, on the node the migration runs on: their targets are
 *   replicated, so every replica receives the rows.
 * - A change of EmbeddedRocksDB settings only (`ALTER TABLE … MODIFY SETTING optimize_for_bulk_insert
 *   …`) has no cluster form: the tables it tunes are ReplacingMergeTree there, without those
 *   settings. It is left out (toClusterStatement: undefined).
 * - Any other statement is refused, so that a new kind of migration statement is looked at for
 *   the cluster before it runs there.
 *
 * With no cluster name the text comes back unchanged from toClusterSql; toClusterStatement then
 * gives the cluster layout on one node (the embedded engine's CLICKHOUSE_LAYOUT=cluster): the same
 * tables in their plain (non-replicated) forms, no ON CLUSTER.
 */

export class ClusterSqlError extends Error {}

/** Engines that have a Replicated* counterpart taking the same parameters after path and replica. */
const MERGE_TREE = /^(|Replacing|Summing|Aggregating|Collapsing|VersionedCollapsing|Graphite)MergeTree$/;

/**
 * The key-value tables' replacements are read a page's keys at a time, nearly every column of each.
 * Granules of 128 rows (8,192 by default: a lookup of 20 keys read most of finding_latest_events at
 * 100k); compression blocks of 4–8 KiB (64 KiB–1 MiB by default, decompressed whole for each granule
 * read; sql/0008 did the same for the other tables): a 20-key lookup of finding_latest_events at 100k
 * took 8.3 ms with the default blocks and 5.4 ms with these; and parts in the compact format at any
 * size (one file for every column; wide parts, one file per column, from 10 MB by default): 3.3 ms
 * against 2.7 ms for a page's lookup at 1m (docs/SCALING.md).
 */
const KEYED_SETTINGS =
  'index_granularity = 128, min_compress_block_size = 4096, max_compress_block_size = 8192, min_bytes_for_wide_part = 1099511627776';

/**
 * The sorting key of a key-value table's replacement: a UUID key in the byte order of its text
 * (SPEC §5.4's id order, UUIDToNum), the order pages list findings in, so that the keys of a page
 * in id order sit in one or two granules instead of one granule each (the engine's own UUID order
 * is another); any other key as it is. The mapping is one to one, so "the last write of a key wins"
 * is unchanged.
 */
function keyedOrder(statement: string, key: string): string {
  const uuid = new RegExp(`[(,]\\s*${key}\\s+UUID\\s*[,)]`).test(statement);
  return uuid ? `UUIDToNum(${key})` : key;
}

/** A cluster name as it may appear after ON CLUSTER (quoted with backticks). */
const CLUSTER_NAME = /^[A-Za-z0-9_][A-Za-z0-9_.-]*$/;

/** An object name: `name`, `db.name`, or backticked parts. */
const NAME = '(?:`[^`]+`|[A-Za-z_][A-Za-z0-9_]*)(?:\\.(?:`[^`]+`|[A-Za-z_][A-Za-z0-9_]*))?';

const CREATE = new RegExp(
  `^(CREATE\\s+(?:OR\\s+REPLACE\\s+)?(?:DATABASE|TABLE|VIEW|MATERIALIZED\\s+VIEW)\\s+(?:IF\\s+NOT\\s+EXISTS\\s+)?)(${NAME})`,
  'i',
);
const ALTERISH = new RegExp(
  `^((?:ALTER|OPTIMIZE|TRUNCATE)\\s+TABLE\\s+(?:IF\\s+EXISTS\\s+)?|DROP\\s+(?:TABLE|VIEW|DATABASE)\\s+(?:IF\\s+EXISTS\\s+)?)(${NAME})`,
  'i',
);
const RENAME = new RegExp(`^(RENAME\\s+TABLE\\s+${NAME}\\s+TO\\s+${NAME}(?:\\s*,\\s*${NAME}\\s+TO\\s+${NAME})*)`, 'i');

/** `ALTER TABLE t MODIFY SETTING` of the EmbeddedRocksDB engine's own settings, and of nothing else. */
const ROCKSDB_SETTINGS_ONLY = new RegExp(
  `^ALTER\\s+TABLE\\s+${NAME}\\s+MODIFY\\s+SETTING\\s+(?:optimize_for_bulk_insert|bulk_insert_block_size)\\s*=\\s*\\w+` +
    '(?:\\s*,\\s*(?:optimize_for_bulk_insert|bulk_insert_block_size)\\s*=\\s*\\w+)*$',
  'i',
);

/** ZooKeeper path of a replicated table: one per shard, database and table. */
export const zooKeeperPath = (table: string) => `/clickhouse/tables/{shard}/{database}/${table}`;

const unquote = (name: string) => name.replace(/`/g, '');
/** The table part of `db.table`. */
const tableOf = (name: string) => unquote(name).split('.').pop()!;

/** `(…)` starting at text[open] (which is `(`): the index just after its matching `)`. */
function closing(text: string, open: number): number {
  let depth = 0;
  let quote: string | undefined;
  for (let i = open; i < text.length; i++) {
    const c = text[i]!;
    if (quote) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
    } else if (c === "'" || c === '"' || c === '`') quote = c;
    else if (c === '(') depth++;
    else if (c === ')' && --depth === 0) return i + 1;
  }
  throw new ClusterSqlError('unbalanced parentheses in an ENGINE clause');
}

/**
 * A replicated table drops an inserted block identical to one of its last 1,000 (insert
 * deduplication); the embedded engine's tables never do. Here a repeated block can be a real
 * change: a totals rewrite A, B, A would keep B. So the tables keep today's semantics (the service's
 * idempotence is its own: ids, recovery batches) with `replicated_deduplication_window = 0`, added
 * to the table's SETTINGS clause (the last one of a CREATE TABLE, which has no SELECT here).
 */
function withoutDeduplication(statement: string): string {
  const setting = 'replicated_deduplication_window = 0';
  const at = statement.search(/\bSETTINGS\b(?![\s\S]*\bSETTINGS\b)/i);
  if (at >= 0 && !/\bAS\s+SELECT\b/i.test(statement)) {
    return `${statement.slice(0, at)}SETTINGS ${setting}, ${statement.slice(at + 'SETTINGS'.length).trimStart()}`;
  }
  return `${statement}\nSETTINGS ${setting}`;
}

/**
 * Rewrites the statement's ENGINE clause (if any) for the cluster's table named `table`: replicated,
 * or in its plain form on one node (the embedded engine's cluster layout).
 */
function clusterEngine(statement: string, table: string, replicas: boolean): string {
  const m = /\bENGINE\s*=\s*([A-Za-z]+)/i.exec(statement);
  if (!m) return statement;
  const engine = m[1]!;
  const start = m.index;
  let end = m.index + m[0].length;
  let args = '';
  const after = /^\s*\(/.exec(statement.slice(end));
  if (after) {
    const open = end + after[0].length - 1;
    const close = closing(statement, open);
    args = statement.slice(open + 1, close - 1).trim();
    end = close;
  }
  const replicated = (family: string, extra: string) =>
    replicas
      ? `ENGINE = Replicated${family}MergeTree('${zooKeeperPath(table)}', '{replica}'${extra ? `, ${extra}` : ''})`
      : `ENGINE = ${family}MergeTree${extra ? `(${extra})` : ''}`;
  const settled = (s: string) => (replicas ? withoutDeduplication(s) : s);

  if (MERGE_TREE.test(engine)) {
    if (!replicas) return statement;
    return settled(statement.slice(0, start) + replicated(engine.slice(0, -'MergeTree'.length), args) + statement.slice(end));
  }
  if (/^Replicated/.test(engine) || /^(Null|Distributed|Dictionary|Merge|Buffer)$/.test(engine)) {
    return statement; // already replicated, or holds no data of its own
  }
  if (engine === 'EmbeddedRocksDB') {
    // Node-local key-value table → a table where the last write of a key wins (FINAL).
    const rest = statement.slice(end);
    const key = /^\s*PRIMARY\s+KEY\s+(\([^)]*\)|[A-Za-z_][A-Za-z0-9_]*)/i.exec(rest);
    if (!key) throw new ClusterSqlError(`EmbeddedRocksDB table ${table}: no PRIMARY KEY clause after the engine`);
    const tail = rest.slice(key[0].length);
    if (/\bSETTINGS\b/i.test(tail)) throw new ClusterSqlError(`EmbeddedRocksDB table ${table}: SETTINGS have no MergeTree form here`);
    const order = /^\w+$/.test(key[1]!) ? keyedOrder(statement.slice(0, start), key[1]!) : key[1]!;
    return settled(`${statement.slice(0, start)}${replicated('Replacing', '')}\nORDER BY ${order}${tail}\nSETTINGS ${KEYED_SETTINGS}`);
  }
  throw new ClusterSqlError(`table ${table}: engine ${engine} has no replicated form here; extend src/storage/cluster.ts`);
}

/**
 * One statement (no trailing `;`) as the cluster runs it; with no cluster name, as the cluster
 * layout of the embedded engine runs it (CLICKHOUSE_LAYOUT=cluster): the same tables on one node,
 * without `ON CLUSTER` and without replication. Undefined: the statement has nothing to do there.
 */
export function toClusterStatement(statement: string, cluster: string | undefined): string | undefined {
  if (cluster !== undefined && !CLUSTER_NAME.test(cluster)) throw new ClusterSqlError(`invalid cluster name ${JSON.stringify(cluster)}`);
  const on = cluster === undefined ? '' : ` ON CLUSTER \`${cluster}\``;
  const s = statement.trim();
  if (/\bON\s+CLUSTER\b/i.test(s)) return s;
  if (ROCKSDB_SETTINGS_ONLY.test(s)) return undefined;

  const create = CREATE.exec(s);
  if (create) {
    const [whole, , name] = create;
    const withCluster = whole + on + s.slice(whole.length);
    return /^CREATE\s+(?:OR\s+REPLACE\s+)?TABLE\b/i.test(s)
      ? clusterEngine(withCluster, tableOf(name!), cluster !== undefined)
      : withCluster;
  }
  const alter = ALTERISH.exec(s);
  if (alter) return alter[0] + on + s.slice(alter[0].length);
  const rename = RENAME.exec(s);
  if (rename) return rename[0] + on + s.slice(rename[0].length);
  // Backfills: run once here; the tables they fill are replicated.
  if (/^INSERT\s+INTO\b/i.test(s)) return s;
  throw new ClusterSqlError(`statement has no cluster form here; extend src/storage/cluster.ts: ${s.slice(0, 80)}`);
}

/**
 * A migration's SQL text as the cluster runs it: its statements (comments dropped), each ended by
 * `;` and a blank line. Without a cluster name: the text unchanged.
 */
export function toClusterSql(sql: string, cluster: string | undefined): string {
  if (cluster === undefined || cluster === '') return sql;
  return splitStatements(sql)
    .flatMap((s) => {
      const rewritten = toClusterStatement(s, cluster);
      return rewritten === undefined ? [] : [`${rewritten};\n`];
    })
    .join('\n');
}

/** Names of the EmbeddedRocksDB tables a migration creates (node-local outside a cluster). */
export function embeddedRocksDbTables(sql: string): string[] {
  return splitStatements(sql).flatMap((s) => {
    const create = CREATE.exec(s);
    return create && /\bENGINE\s*=\s*EmbeddedRocksDB\b/i.test(s) ? [tableOf(create[2]!)] : [];
  });
}
