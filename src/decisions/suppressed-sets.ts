import { randomUUID } from 'node:crypto';
import { onDataChange } from '../cache/data-version.js';
import { NEVER } from '../domain/time.js';
import type { Store } from '../storage/gateway.js';
import { lapsedSince } from './lapses.js';
import { rowsCopiesOf } from './suppressed-rows.js';

/**
 * The findings suppressed at an instant T (SPEC §12.3), held by the engine as ready-built sets
 * (Set tables: always in memory, used as the right side of IN) so that a statistic's statement
 * pays only for testing its rows against them. Built in the statement instead, every statement
 * read both decision tables and hashed thousands of keys before reading a single finding, which
 * costs more than the statistics themselves.
 *
 * Each decision is active over one interval of whole seconds [since, until): made in `since`'s
 * second; ended by its first revocation's second, its expiry or its lapse (src/decisions/lapses.ts),
 * whichever comes first. The suppressed set is therefore the same between two consecutive interval
 * edges: one set per span between edges, built when a statement first needs it.
 *
 * Embedded only, for the reason lapses.ts gives: the process owning the data folder sees every
 * change (a data version bump, a decision made or revoked) and forgets the intervals then. Sets of
 * a forgotten state are dropped a while later, once statements that bound them have finished.
 */

interface Interval {
  decision: string;
  target: string;
  finding: string;
  since: number;
  until: number;
}

/** The two tables of one suppressed set: the suppressed findings' ids and their targets' ids. */
export interface SuppressedSet {
  findings: string;
  targets: string;
}

interface State {
  intervals: Interval[];
  /** Every interval edge, ascending: the set changes only there. */
  edges: number[];
  sets: Map<number, Promise<SuppressedSet | null>>;
}

const PREFIX = 'suppressed_set_';
const DROP_AFTER_MS = 60_000;
/** Sets kept per state (distinct instants asked about, e.g. several atDate), the oldest retired first. */
const MAX_SETS = 16;
const states = new Map<string, Promise<State>>();
const cleaned = new Set<string>();

/** A change of the data or of the decisions: intervals are read again, the old sets retired. */
export function forgetSuppressedSets(): void {
  for (const [key, state] of states) void state.then((s) => retire(key, [...s.sets.values()])).catch(() => undefined);
  states.clear();
}
onDataChange(forgetSuppressedSets);

const stores = new Map<string, Store>();

function retire(key: string, tables: Promise<SuppressedSet | null>[]): void {
  const store = stores.get(key);
  if (!store) return;
  setTimeout(() => {
    for (const set of tables)
      void set
        .then((s) =>
          s
            ? Promise.all(
                [s.findings, s.targets, ...rowsCopiesOf(s)].map((t) => store.command(`DROP TABLE IF EXISTS ${t}`, {}, { scratch: true })),
              )
            : undefined,
        )
        .catch(() => undefined);
  }, DROP_AFTER_MS).unref();
}

/** Sets left by an earlier process on the same folder (it may have stopped before dropping them). */
async function dropLeftovers(store: Store): Promise<void> {
  const key = store.database;
  if (cleaned.has(key)) return;
  cleaned.add(key);
  const rows = await store.query<{ name: string }>(
    'SELECT name FROM system.tables WHERE database = currentDatabase() AND startsWith(name, {prefix:String})',
    { prefix: PREFIX },
  );
  for (const { name } of rows) await store.command(`DROP TABLE IF EXISTS ${name}`, {}, { scratch: true });
}

async function readIntervals(store: Store): Promise<Interval[]> {
  const [decisions, revocations, lapses] = await Promise.all([
    store.query<{ id: string; target: string; finding: string; since: number; expires: number | null }>(
      `SELECT toString(id) AS id, toString(target_id) AS target, toString(finding_id) AS finding,
              toUInt32(toStartOfSecond(created_at)) AS since, toUnixTimestamp(expires_at) AS expires
       FROM finding_decisions`,
    ),
    store.query<{ id: string; at: number }>(
      `SELECT toString(decision_id) AS id, toUInt32(toStartOfSecond(min(revoked_at))) AS at
       FROM decision_revocations GROUP BY decision_id`,
    ),
    lapsedSince(store),
  ]);
  const revoked = new Map(revocations.map((r) => [r.id, Number(r.at)]));
  return decisions.flatMap((d) => {
    const until = Math.min(Number(d.expires ?? NEVER), revoked.get(d.id) ?? NEVER, lapses.get(d.id) ?? NEVER);
    const since = Number(d.since);
    return since < until ? [{ decision: d.id, target: d.target, finding: d.finding, since, until }] : [];
  });
}

async function readState(store: Store): Promise<State> {
  await dropLeftovers(store);
  const intervals = await readIntervals(store);
  const edges = [...new Set(intervals.flatMap((i) => [i.since, i.until]))].sort((a, b) => a - b);
  return { intervals, edges, sets: new Map() };
}

/** The number of edges at or before t: equal for every instant between the same two edges. */
function spanOf(edges: number[], t: number): number {
  let lo = 0;
  let hi = edges.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (edges[mid]! <= t) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

async function build(store: Store, intervals: Interval[], t: number): Promise<SuppressedSet | null> {
  const findings = new Set<string>();
  const targets = new Set<string>();
  for (const i of intervals) {
    if (i.since <= t && t < i.until) {
      findings.add(i.finding);
      targets.add(i.target);
    }
  }
  if (findings.size === 0) return null;
  // A finding id (src/domain/ids.ts) is unique across targets: one UUID to hash per row tested.
  const suffix = randomUUID().replaceAll('-', '');
  const set = { findings: `${PREFIX}${suffix}`, targets: `${PREFIX}${suffix}_targets` };
  // Scratch statements: they change nothing other statements read (Store.changes()).
  const scratch = { scratch: true };
  await store.command(`CREATE TABLE ${set.findings} (id UUID) ENGINE = Set`, {}, scratch);
  await store.command(`CREATE TABLE ${set.targets} (id UUID) ENGINE = Set`, {}, scratch);
  await store.insert(
    set.findings,
    [...findings].map((id) => ({ id })),
    scratch,
  );
  await store.insert(
    set.targets,
    [...targets].map((id) => ({ id })),
    scratch,
  );
  return set;
}

function stateOf(store: Store): Promise<State> {
  const key = store.database;
  stores.set(key, store);
  let state = states.get(key);
  if (!state) {
    state = readState(store);
    states.set(key, state);
    state.catch(() => states.delete(key));
  }
  return state;
}

/**
 * The set of findings suppressed at `t` (epoch seconds, clamped as statements clamp T), null when
 * none is, or undefined where statements must compute it themselves (a ClickHouse server).
 */
export async function suppressedSetAt(store: Store, t: number): Promise<SuppressedSet | null | undefined> {
  if (store.mode !== 'embedded') return undefined;
  const key = store.database;
  const s = await stateOf(store);
  const at = Math.min(Math.max(t, 0), NEVER - 1);
  const span = spanOf(s.edges, at);
  let set = s.sets.get(span);
  if (!set) {
    set = build(store, s.intervals, at);
    s.sets.set(span, set);
    if (s.sets.size > MAX_SETS) {
      const [oldest, built] = s.sets.entries().next().value!;
      s.sets.delete(oldest);
      retire(key, [built]);
    }
    set.catch(() => s.sets.delete(span));
  }
  return set;
}

/**
 * The decisions active at `t` on these findings (decision ids: the statement then reads only
 * those rows), or undefined where the process does not know (a ClickHouse server).
 */
export async function decidedAt(store: Store, findingIds: readonly string[], t: number): Promise<string[] | undefined> {
  if (store.mode !== 'embedded') return undefined;
  const s = await stateOf(store);
  const at = Math.min(Math.max(t, 0), NEVER - 1);
  const wanted = new Set(findingIds);
  return s.intervals.filter((i) => wanted.has(i.finding) && i.since <= at && at < i.until).map((i) => i.decision);
}
