import type { Store } from '../storage/gateway.js';
import { type Share, type ShareSelection, sharesOf } from './suppressed-shares.js';
import type { SuppressedSet } from './suppressed-sets.js';

/**
 * The current rows of the findings suppressed at an instant, copied into a small table of the
 * engine (the columns of `findings` the statistics read, and the teams of each finding's target),
 * so that an additive statistic — a count or a sum by severity, target or issue — subtracts them
 * from its answer over every finding. Testing every row against the suppressed set instead reads
 * each row's id (16 bytes that no statistic reads otherwise) and hashes it: with 10,000 decisions
 * at 1M findings that cost more than the cheaper statistics themselves (bench/HISTORY.md).
 *
 * The copy holds the data as it was when it was made, so it is tied to that state: built when no
 * statement changing data has reached the engine for QUIET_MS, and valid while none has since
 * (Store.changes()). Every statement reading it is bound to that state (`unchangedSince`): the
 * engine's turns refuse it if a change got in first, and the statistic then reads the rows in its
 * own statement. While the data keeps changing (ingestion), statistics read them in the statement.
 *
 * Embedded only: a ClickHouse server's data is changed by other processes this one cannot count.
 */

export interface RowsCopy {
  table: string;
  /** What the rows take from the current statistics of a selection, made with the copy (suppressed-shares.ts). */
  shares: (selection: ShareSelection) => Share;
  /** Store.changes() when the copy was made: valid while it is still the count. */
  changes: number;
}

interface Copies {
  current?: RowsCopy;
  timer?: NodeJS.Timeout;
  building?: Promise<void>;
  made: number;
  /** The set was retired: a copy finished after that is dropped at once. */
  retired?: boolean;
}

/** No change for this long before a copy is made: while batches commit, copies would be outdated at once. */
const QUIET_MS = 200;
const copies = new WeakMap<SuppressedSet, Copies>();

/** The columns of `findings` (and of its team copy) that statistics read, in the copy. */
const COPIED_COLUMNS = [
  'id',
  'target_id',
  'issue_id',
  'status',
  'score',
  'severity',
  'found_at',
  'fixed_at',
  'first_found_at',
  'last_found_at',
  'closed_exposure',
  'ttr_sum',
  'ttr_count',
  'fix_seconds',
  'latest_at',
] as const;

async function build(store: Store, set: SuppressedSet, c: Copies): Promise<void> {
  const changes = store.changes();
  const table = `${set.findings}_rows${++c.made}`;
  const columns = COPIED_COLUMNS.map((col) => `f.${col} AS ${col}`).join(', ');
  // Bound to the count read above: refused (nothing created) if a change reached the engine first.
  await store.command(
    `CREATE TABLE ${table} ENGINE = Memory AS
     SELECT ${columns}, t.teams AS teams
     FROM (SELECT *, fix_seconds, latest_at FROM findings FINAL WHERE id IN {set:Identifier}) AS f
     LEFT JOIN (SELECT target_id, groupUniqArray(team) AS teams FROM target_teams
                WHERE target_id IN {targets:Identifier} GROUP BY target_id) AS t ON t.target_id = f.target_id`,
    { set: set.findings, targets: set.targets },
    { scratch: true, unchangedSince: changes },
  );
  let shares: RowsCopy['shares'];
  try {
    shares = await sharesOf(store, table, changes);
  } catch (err) {
    await store.command(`DROP TABLE IF EXISTS ${table}`, {}, { scratch: true }).catch(() => undefined);
    throw err;
  }
  const copy = { table, shares, changes };
  const replaced = c.retired ? copy : c.current;
  if (!c.retired) c.current = copy;
  if (replaced) await dropCopy(store, replaced);
}

const dropCopy = (store: Store, copy: RowsCopy) => store.command(`DROP TABLE IF EXISTS ${copy.table}`, {}, { scratch: true });

function schedule(store: Store, set: SuppressedSet, c: Copies): void {
  if (c.timer || c.building || c.retired) return;
  const seen = store.changes();
  c.timer = setTimeout(() => {
    c.timer = undefined;
    // Still changing: the next statistic asking schedules again.
    if (store.changes() !== seen || c.current?.changes === seen) return;
    c.building = build(store, set, c)
      .catch(() => undefined) // refused or failed: statistics read the rows in their statements meanwhile
      .finally(() => {
        c.building = undefined;
      });
  }, QUIET_MS);
  c.timer.unref();
}

/**
 * The copy of the set's rows valid for the data as it is now, or undefined (none yet, or the data
 * changed since): a copy is then made once the data has been quiet for a moment.
 */
export function rowsCopyOf(store: Store, set: SuppressedSet): RowsCopy | undefined {
  let c = copies.get(set);
  if (!c) {
    c = { made: 0 };
    copies.set(set, c);
  }
  if (c.current && c.current.changes === store.changes()) return c.current;
  schedule(store, set, c);
  return undefined;
}

/** The copies of a retired set, to drop with it. */
export function rowsCopiesOf(set: SuppressedSet): string[] {
  const c = copies.get(set);
  if (!c) return [];
  c.retired = true;
  if (c.timer) clearTimeout(c.timer);
  c.timer = undefined;
  return c.current ? [c.current.table] : [];
}
