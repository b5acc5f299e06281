import { SEVERITIES, type BySeverity, type Severity, zeroBySeverity } from '../domain/severity.js';
import { NEVER } from '../domain/time.js';
import { clampAt, clampTime } from '../filters/sql.js';
import { slaSeconds, type SlaPolicy } from '../sla/policy.js';
import type { Store } from '../storage/gateway.js';

/**
 * What the findings suppressed in one state of the data take from the statistics of a selection,
 * made from the copy of their rows (suppressed-rows.ts) and of that state. A statistic whose
 * selection the copy can tell — teams, exact identifiers, score bounds, labels; current, at an
 * atDate or over a range — then runs the statement of a store without decisions, bound to the
 * copy's state, and takes its share from the answer, evaluated here as src/filters/sql.ts and
 * src/sla/sql.ts state the conditions: the engine plans and runs nothing more (a second branch
 * costs it 2–3 ms whatever its size, a joinGet about 0.5 ms; bench/HISTORY.md).
 *
 * The share of one team, or of everything, without filters is counted once per state; another
 * selection's when first asked, over the suppressed findings it selects, and kept with the state.
 * What depends on the instant is counted per request. The targets' highest open severities before
 * and after the suppression, and the issues left without a counted finding, are read once, from
 * their counters, with the copy.
 *
 * The shares at "now" are exact while every instant of the suppressed findings is before now
 * (`latest`), as the statements' own shortcuts at now are (src/filters/sql.ts `state`, src/sla/sql.ts).
 */

/** What the counters and the per-finding sums hold, summed over the suppressed findings. */
export type Summed = 'open' | 'fixed' | 'ttr_sum' | 'ttr_count';

/** SPEC §12.2's counts of the suppressed findings, by severity. */
export interface SlaShare {
  open: number;
  breached: number;
  fixed: number;
  fixed_within: number;
}

/** The period arrays' instants (epoch seconds) a statistic's statement is bound to (src/filters/sql.ts). */
export interface ShareTimes {
  atDate?: number | undefined;
  minDate?: number | undefined;
  maxDateEnd?: number | undefined;
}

export interface Share {
  /** What the counters and per-finding sums hold for the suppressed findings, by severity. */
  sums: (severity: Severity, column: Summed) => number;
  /**
   * Per severity, the change the suppressed OPEN findings make to the targets counted there by
   * §7.7 (a target leaves its highest severity, and lands on the next one left, if any).
   */
  readonly assets: BySeverity<number>;
  /**
   * Of everything, without filters only: per issue the suppressed findings OPEN and FIXED, and the
   * issues none of whose findings is left (SPEC §7.3 lists an issue with a counted finding).
   */
  issues?: IssueShare;
  /** The latest instant of the suppressed findings (epoch seconds): a share at now needs now > latest. */
  latest: number;
  /** By severity, those `statusAndTime` (src/filters/sql.ts) selects with atDate or a range. */
  countsAt: (status: 'OPEN' | 'FIXED', f: ShareTimes, now: number) => BySeverity<number>;
  /** By severity, the whole hours and the number of their periods fixed in [from, to) (§7.4 with dates). */
  fixedIn: (from: number, to: number) => BySeverity<{ hours: number; periods: number }>;
  /** [value, count] of §7.5's total exposure at t of the suppressed findings existing at t. */
  totalExposuresAt: (t: number) => Map<number, number>;
  /** [value, count] of §7.6's current exposure at t of the suppressed findings OPEN at t. */
  currentExposuresAt: (t: number) => Map<number, number>;
  /** §12.2 at t of the suppressed findings of a severity, their closed periods counted where `fixedWhen`. */
  slaAt: (severity: Severity, t: number, fixedWhen: (fixedAt: number) => boolean, policy: SlaPolicy) => SlaShare;
  /** The same at t > latest, every closed period counted: from each severity's sorted instants and durations. */
  slaNow: (severity: Severity, t: number, policy: SlaPolicy) => SlaShare;
}

export interface IssueShare {
  less: Map<string, { open: number; fixed: number }>;
  gone: string[];
}

/** One suppressed finding, as the copy holds it. */
interface Row {
  teams: string[];
  target_id: string;
  issue_id: string;
  score: number;
  labels: string[];
  severity: Severity;
  status: 'OPEN' | 'FIXED';
  first_found_at: number;
  last_found_at: number;
  closed_exposure: number;
  ttr_sum: number;
  ttr_count: number;
  latest_at: number;
  /** The OPEN periods (epoch seconds; fixed_at NEVER while open). */
  found_at: number[];
  fixed_at: number[];
}

const hours = (seconds: number) => Math.trunc(seconds / 3600);

/** How many of the ascending `values` are at most `bound`. */
function atMost(values: Float64Array, bound: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid]! <= bound) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

const sorted = (values: number[]) => Float64Array.from(values).sort();

/** Adds `value(x)` for each x of `xs`, whose values come in order: equal ones are counted in a run. */
function addRuns(histogram: Map<number, number>, xs: Float64Array, value: (x: number) => number): void {
  let i = 0;
  while (i < xs.length) {
    const v = value(xs[i]!);
    let n = 1;
    while (i + n < xs.length && value(xs[i + n]!) === v) n++;
    histogram.set(v, (histogram.get(v) ?? 0) + n);
    i += n;
  }
}

function add(histogram: Map<number, number>, value: number): void {
  histogram.set(value, (histogram.get(value) ?? 0) + 1);
}

/** SPEC §4.2 on a finding's periods, as src/filters/sql.ts `state` states them. */
const existsAt = (r: Row, t: number) => r.found_at[0] !== undefined && r.found_at[0] <= t;
/** The start of the period OPEN at t, or undefined. */
function openSince(r: Row, t: number): number | undefined {
  for (let i = r.found_at.length - 1; i >= 0; i--) {
    const f = r.found_at[i]!;
    if (f <= t && t < r.fixed_at[i]!) return f;
  }
  return undefined;
}

/** `statusAndTime` of src/filters/sql.ts with atDate or a range, on one finding. */
function selectedAt(r: Row, status: 'OPEN' | 'FIXED', f: ShareTimes, now: number): boolean {
  if (f.atDate !== undefined) {
    const t = clampAt(f.atDate);
    const open = openSince(r, t) !== undefined;
    return status === 'OPEN' ? open : existsAt(r, t) && !open;
  }
  const from = clampTime(f.minDate ?? 0);
  if (status === 'OPEN') {
    const to = clampTime(f.maxDateEnd ?? NEVER);
    return r.found_at.some((x) => x >= from && x < to);
  }
  // Rule 2: the last period started by E is closed, with L <= fixed_at <= E.
  const end = clampTime(f.maxDateEnd !== undefined ? f.maxDateEnd - 1 : now);
  const last = r.found_at.findLastIndex((x) => x <= end);
  return last >= 0 && r.fixed_at[last]! >= from && r.fixed_at[last]! <= end;
}

/** Computed on first use, then kept: a share is asked for a few of its parts. */
function once<T>(make: () => T): () => T {
  let value: T | undefined;
  let made = false;
  return () => {
    if (!made) {
      value = make();
      made = true;
    }
    return value as T;
  };
}

/**
 * The share of the suppressed findings in `rows` (one selection's), given their targets' highest
 * open severities before and after, and (of everything, without filters) the issues' share.
 */
function shareOf(rows: Row[], highest: Map<string, { before: Severity; after: Severity | undefined }>, issues?: IssueShare): Share {
  let latest = 0;
  for (const r of rows) latest = Math.max(latest, r.latest_at);
  const bySeverity = once(() => {
    const out = Object.fromEntries(SEVERITIES.map((s) => [s, [] as Row[]])) as BySeverity<Row[]>;
    for (const r of rows) out[r.severity].push(r);
    return out;
  });
  const sums = once(() => {
    const out = Object.fromEntries(SEVERITIES.map((s) => [s, { open: 0, fixed: 0, ttr_sum: 0, ttr_count: 0 }])) as BySeverity<
      Record<Summed, number>
    >;
    for (const r of rows) {
      const sum = out[r.severity];
      sum[r.status === 'OPEN' ? 'open' : 'fixed'] += 1;
      sum.ttr_sum += r.ttr_sum;
      sum.ttr_count += r.ttr_count;
    }
    return out;
  });
  const assets = once(() => {
    const out = zeroBySeverity();
    const targets = new Set<string>();
    for (const r of rows) {
      const h = highest.get(r.target_id);
      if (!h || targets.has(r.target_id)) continue;
      targets.add(r.target_id);
      out[h.before] -= 1;
      if (h.after) out[h.after] += 1;
    }
    return out;
  });
  // At an instant after every instant of the rows: each OPEN finding is open since its last start
  // and every closed period has ended, so sorted values answer in a pass over distinct values.
  const atNow = once(() => {
    const open = rows.filter((r) => r.status === 'OPEN');
    const closed = (r: Row) => r.fixed_at.flatMap((x, i) => (x === NEVER ? [] : [x - r.found_at[i]!]));
    const fixedTotals = new Map<number, number>();
    for (const r of rows) if (r.status === 'FIXED') add(fixedTotals, hours(r.closed_exposure));
    return {
      // Descending starts: ascending exposures.
      starts: sorted(open.map((r) => r.last_found_at)).reverse(),
      // closed_exposure − start: a total exposure at t is hours(t + offset), ascending with it.
      offsets: sorted(open.map((r) => r.closed_exposure - r.last_found_at)),
      fixedTotals,
      opened: Object.fromEntries(
        SEVERITIES.map((s) => [s, sorted(open.filter((r) => r.severity === s).map((r) => r.last_found_at))]),
      ) as BySeverity<Float64Array>,
      durations: Object.fromEntries(SEVERITIES.map((s) => [s, sorted(bySeverity()[s].flatMap(closed))])) as BySeverity<Float64Array>,
    };
  });
  return {
    sums: (severity, column) => sums()[severity][column],
    get assets() {
      return assets();
    },
    latest,
    ...(issues ? { issues } : {}),
    countsAt: (status, f, now) => {
      const out = zeroBySeverity();
      for (const r of rows) if (selectedAt(r, status, f, now)) out[r.severity] += 1;
      return out;
    },
    fixedIn: (from, to) => {
      const out = Object.fromEntries(SEVERITIES.map((s) => [s, { hours: 0, periods: 0 }])) as BySeverity<{
        hours: number;
        periods: number;
      }>;
      for (const r of rows) {
        for (let i = 0; i < r.fixed_at.length; i++) {
          const x = r.fixed_at[i]!;
          if (x < from || x >= to) continue;
          out[r.severity].hours += hours(x - r.found_at[i]!);
          out[r.severity].periods += 1;
        }
      }
      return out;
    },
    totalExposuresAt: (t) => {
      if (t > latest) {
        const { fixedTotals, offsets } = atNow();
        const out = new Map(fixedTotals);
        addRuns(out, offsets, (c) => hours(t + c));
        return out;
      }
      const out = new Map<number, number>();
      for (const r of rows) {
        if (!existsAt(r, t)) continue;
        let seconds = 0;
        for (let i = 0; i < r.found_at.length; i++) {
          const f = r.found_at[i]!;
          if (f <= t) seconds += Math.min(r.fixed_at[i]!, t) - f;
        }
        add(out, hours(seconds));
      }
      return out;
    },
    currentExposuresAt: (t) => {
      if (t > latest) {
        const out = new Map<number, number>();
        addRuns(out, atNow().starts, (f) => hours(t - f));
        return out;
      }
      const out = new Map<number, number>();
      for (const r of rows) {
        const since = openSince(r, t);
        if (since !== undefined) add(out, hours(t - since));
      }
      return out;
    },
    slaAt: (severity, t, fixedWhen, policy) => {
      const allowed = slaSeconds(policy, severity);
      const out = { open: 0, breached: 0, fixed: 0, fixed_within: 0 };
      for (const r of bySeverity()[severity]) {
        for (let i = 0; i < r.found_at.length; i++) {
          const f = r.found_at[i]!;
          const x = r.fixed_at[i]!;
          if (f <= t && t < x) {
            out.open += 1;
            if (allowed !== undefined && t >= f + allowed) out.breached += 1;
          }
          if (fixedWhen(x)) {
            out.fixed += 1;
            if (allowed !== undefined && x <= f + allowed) out.fixed_within += 1;
          }
        }
      }
      return out;
    },
    slaNow: (severity, t, policy) => {
      const allowed = slaSeconds(policy, severity);
      const { opened, durations } = atNow();
      return {
        open: opened[severity].length,
        breached: allowed === undefined ? 0 : atMost(opened[severity], t - allowed),
        fixed: durations[severity].length,
        fixed_within: allowed === undefined ? 0 : atMost(durations[severity], allowed),
      };
    },
  };
}

/** Filtered selections whose shares a copy keeps. */
const SELECTIONS_KEPT = 64;

/** A selection of suppressed findings the copy can tell (each part narrows it). */
export interface ShareSelection {
  team?: string | undefined;
  /** At least one of them; empty: none. */
  teams?: string[] | undefined;
  /** In each of these lists of target ids. */
  targets?: string[][] | undefined;
  minScore?: number | undefined;
  maxScore?: number | undefined;
  labels?: string[] | undefined;
}

const selects = (s: ShareSelection) => (r: Row) =>
  (s.team === undefined || r.teams.includes(s.team)) &&
  (s.teams === undefined || s.teams.some((t) => r.teams.includes(t))) &&
  (s.targets === undefined || s.targets.every((ids) => ids.includes(r.target_id))) &&
  (s.minScore === undefined || r.score >= s.minScore) &&
  (s.maxScore === undefined || r.score <= s.maxScore) &&
  (s.labels === undefined || s.labels.length === 0 || r.labels.some((l) => s.labels!.includes(l)));

/**
 * The shares of the suppressed findings copied into `table`, by selection. Their issues' labels
 * and their targets' counters are read bound to `changes`, the state of the copy: refused if it has
 * changed.
 */
export async function sharesOf(store: Store, table: string, changes: number): Promise<(selection: ShareSelection) => Share> {
  const rows = await store.query<Row>(
    `SELECT c.teams AS teams, toString(c.target_id) AS target_id, toString(c.issue_id) AS issue_id, c.score AS score, ifNull(i.labels, []) AS labels,
            toString(c.severity) AS severity, toString(c.status) AS status,
            toUnixTimestamp(c.first_found_at) AS first_found_at, toUnixTimestamp(c.last_found_at) AS last_found_at,
            c.closed_exposure AS closed_exposure, c.ttr_sum AS ttr_sum, c.ttr_count AS ttr_count,
            toUnixTimestamp(c.latest_at) AS latest_at,
            arrayMap(x -> toUnixTimestamp(x), c.found_at) AS found_at, arrayMap(x -> toUnixTimestamp(x), c.fixed_at) AS fixed_at
     FROM ${table} AS c
     LEFT JOIN (SELECT id, labels FROM issues_current WHERE id IN (SELECT issue_id FROM ${table})) AS i ON i.id = c.issue_id`,
    {},
    { unchangedSince: changes },
  );
  for (const r of rows) {
    r.closed_exposure = Number(r.closed_exposure);
    r.ttr_sum = Number(r.ttr_sum);
    r.ttr_count = Number(r.ttr_count);
  }
  const highest = await highestOpen(store, rows, changes);
  const issues = await issuesLeft(store, rows, changes);
  // Each team's rows, so that a selection within a team reads only them.
  const teamRows = new Map<string, Row[]>();
  for (const r of rows) {
    for (const team of r.teams) {
      const list = teamRows.get(team);
      if (list) list.push(r);
      else teamRows.set(team, [r]);
    }
  }
  const plainShares = new Map<string, Share>();
  const selected = new Map<string, Share>();
  return (selection) => {
    const within = selection.team === undefined ? rows : (teamRows.get(selection.team) ?? []);
    const plain = Object.entries(selection).every(([key, value]) => key === 'team' || value === undefined);
    if (!plain) {
      // A selection's share, like a team's, is of this state: kept for the next request of it (a few).
      const key = JSON.stringify(selection);
      let share = selected.get(key);
      if (!share) {
        if (selected.size >= SELECTIONS_KEPT) selected.clear();
        share = shareOf(within.filter(selects({ ...selection, team: undefined })), highest);
        selected.set(key, share);
      }
      return share;
    }
    const key = selection.team ?? '';
    let share = plainShares.get(key);
    if (!share) {
      share = shareOf(within, highest, selection.team === undefined ? issues : undefined);
      plainShares.set(key, share);
    }
    return share;
  };
}

/** Each issue's suppressed findings by status, and the issues they leave without a counted finding (its counters, migration 0011). */
async function issuesLeft(store: Store, rows: Row[], changes: number): Promise<IssueShare> {
  const less = new Map<string, { open: number; fixed: number }>();
  for (const r of rows) {
    const counts = less.get(r.issue_id) ?? { open: 0, fixed: 0 };
    counts[r.status === 'OPEN' ? 'open' : 'fixed'] += 1;
    less.set(r.issue_id, counts);
  }
  if (less.size === 0) return { less, gone: [] };
  // Aliased apart from issue_id: an alias of that name would be what WHERE compares.
  const counters = await store.query<{ issue: string; open: number; fixed: number }>(
    `SELECT toString(issue_id) AS issue, sum(open) AS open, sum(fixed) AS fixed
     FROM issue_finding_counts WHERE issue_id IN {issues:Array(UUID)} GROUP BY issue`,
    { issues: [...less.keys()] },
    { unchangedSince: changes },
  );
  const gone = counters
    .filter((c) => Number(c.open) + Number(c.fixed) - less.get(c.issue)!.open - less.get(c.issue)!.fixed <= 0)
    .map((c) => c.issue);
  return { less, gone };
}

/** Each target with suppressed OPEN findings: its highest open severity by its counters, and without them. */
async function highestOpen(
  store: Store,
  rows: Row[],
  changes: number,
): Promise<Map<string, { before: Severity; after: Severity | undefined }>> {
  const suppressed = new Map<string, BySeverity<number>>();
  for (const r of rows) {
    if (r.status !== 'OPEN') continue;
    const counts = suppressed.get(r.target_id) ?? zeroBySeverity();
    counts[r.severity] += 1;
    suppressed.set(r.target_id, counts);
  }
  const out = new Map<string, { before: Severity; after: Severity | undefined }>();
  if (suppressed.size === 0) return out;
  // Aliased apart from target_id: an alias of that name would be what WHERE compares.
  const counters = await store.query<{ target: string } & BySeverity<number>>(
    `SELECT toString(target_id) AS target, ${SEVERITIES.map((s) => `sum(open_${s}) AS ${s}`).join(', ')}
     FROM finding_counts WHERE target_id IN {targets:Array(UUID)} GROUP BY target`,
    { targets: [...suppressed.keys()] },
    { unchangedSince: changes },
  );
  for (const c of counters) {
    const less = suppressed.get(c.target)!;
    const before = SEVERITIES.find((s) => Number(c[s]) > 0);
    if (!before) continue;
    out.set(c.target, { before, after: SEVERITIES.find((s) => Number(c[s]) - less[s] > 0) });
  }
  return out;
}
