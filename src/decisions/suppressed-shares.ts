import { SEVERITIES, type BySeverity, type Severity, zeroBySeverity } from '../domain/severity.js';
import { slaSeconds, type SlaPolicy } from '../sla/policy.js';
import type { Store } from '../storage/gateway.js';

/**
 * What the findings suppressed in one state of the data take from the statistics of one team's
 * scope, or of everything, made with the copy of their rows (suppressed-rows.ts) and of that state.
 * A statistic of such a scope without label or score filters then runs the statement of a store
 * without decisions, bound to the copy's state, and takes its share from the answer: the engine
 * plans and runs nothing more (a second branch costs it 2–3 ms whatever its size, a joinGet about
 * 0.5 ms; bench/HISTORY.md).
 *
 * Everything here is counted once per state, at the copy: sums by severity, how the suppressed
 * findings change their targets' highest open severity, and per severity the sorted instants and
 * durations that the statistics at "now" count below or above a bound. Only the exposure values
 * are taken per request, one per suppressed OPEN finding of the scope: a histogram has to be
 * subtracted value by value.
 *
 * The shares at "now" are exact while every instant of the suppressed findings is before now
 * (`latest`), as the statements' own shortcuts at now are (src/filters/sql.ts `state`, src/sla/sql.ts).
 */

/** What the counters and the per-finding sums hold, summed over the suppressed findings. */
export const SUMMED = ['open', 'fixed', 'ttr_sum', 'ttr_count'] as const;
export type Summed = (typeof SUMMED)[number];

/** SPEC §12.2's counts of the suppressed findings, by severity. */
export interface SlaShare {
  open: number;
  breached: number;
  fixed: number;
  fixed_within: number;
}

export interface Share {
  sums: (severity: Severity, column: Summed) => number;
  /**
   * Per severity, the change the suppressed OPEN findings make to the targets counted there by
   * §7.7 (a target leaves its highest severity, and lands on the next one left, if any).
   */
  assets: BySeverity<number>;
  /** The latest instant of the suppressed findings (epoch seconds): the shares below need now > latest. */
  latest: number;
  /** [value, count] of §7.6's current exposure at now of the suppressed OPEN findings. */
  currentExposures: (now: number) => Map<number, number>;
  /** [value, count] of §7.5's total exposure at now of the suppressed findings. */
  totalExposures: (now: number) => Map<number, number>;
  sla: (severity: Severity, now: number, policy: SlaPolicy) => SlaShare;
}

/** One suppressed finding, as the copy holds it. */
interface Row {
  teams: string[];
  target_id: string;
  severity: Severity;
  status: 'OPEN' | 'FIXED';
  first_found_at: number;
  last_found_at: number;
  closed_exposure: number;
  ttr_sum: number;
  ttr_count: number;
  fix_seconds: number[];
  latest_at: number;
}

const hours = (seconds: number) => Math.trunc(seconds / 3600);

/** How many of the ascending `values` are at most `bound`. */
function atMost(values: readonly number[], bound: number): number {
  let lo = 0;
  let hi = values.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (values[mid]! <= bound) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function add(histogram: Map<number, number>, value: number): void {
  histogram.set(value, (histogram.get(value) ?? 0) + 1);
}

/** The share of the suppressed findings in `rows` (one scope's), given each target's highest severity before and after. */
function shareOf(rows: Row[], highest: Map<string, { before: Severity; after: Severity | undefined }>): Share {
  const sums = new Map<string, number>();
  const open = new Map<Severity, number[]>(SEVERITIES.map((s) => [s, []]));
  const durations = new Map<Severity, number[]>(SEVERITIES.map((s) => [s, []]));
  const assets = zeroBySeverity();
  const targets = new Set<string>();
  let latest = 0;
  for (const r of rows) {
    const sum = (column: Summed, n: number) => sums.set(`${r.severity}:${column}`, (sums.get(`${r.severity}:${column}`) ?? 0) + n);
    sum(r.status === 'OPEN' ? 'open' : 'fixed', 1);
    sum('ttr_sum', r.ttr_sum);
    sum('ttr_count', r.ttr_count);
    if (r.status === 'OPEN') open.get(r.severity)!.push(r.last_found_at);
    durations.get(r.severity)!.push(...r.fix_seconds);
    latest = Math.max(latest, r.latest_at);
    const h = highest.get(r.target_id);
    if (h && !targets.has(r.target_id)) {
      targets.add(r.target_id);
      assets[h.before] -= 1;
      if (h.after) assets[h.after] += 1;
    }
  }
  for (const list of [...open.values(), ...durations.values()]) list.sort((a, b) => a - b);
  const openRows = rows.filter((r) => r.status === 'OPEN');
  return {
    sums: (severity, column) => sums.get(`${severity}:${column}`) ?? 0,
    assets,
    latest,
    currentExposures: (now) => {
      const out = new Map<number, number>();
      for (const r of openRows) add(out, Math.max(0, hours(now - r.last_found_at)));
      return out;
    },
    totalExposures: (now) => {
      const out = new Map<number, number>();
      for (const r of rows) {
        if (r.first_found_at <= now) add(out, hours(r.closed_exposure + (r.status === 'OPEN' ? now - r.last_found_at : 0)));
      }
      return out;
    },
    sla: (severity, now, policy) => {
      const allowed = slaSeconds(policy, severity);
      const opened = open.get(severity)!;
      const closed = durations.get(severity)!;
      return {
        open: opened.length,
        breached: allowed === undefined ? 0 : atMost(opened, now - allowed),
        fixed: closed.length,
        fixed_within: allowed === undefined ? 0 : atMost(closed, allowed),
      };
    },
  };
}

/**
 * The shares of the suppressed findings copied into `table`, per team ('' for everything). Their
 * targets' counters are read bound to `changes`, the state of the copy: refused if it has changed.
 */
export async function sharesOf(store: Store, table: string, changes: number): Promise<(team: string) => Share> {
  const rows = await store.query<Row>(
    `SELECT teams, toString(target_id) AS target_id, toString(severity) AS severity, toString(status) AS status,
            toUnixTimestamp(first_found_at) AS first_found_at, toUnixTimestamp(last_found_at) AS last_found_at,
            closed_exposure, ttr_sum, ttr_count, fix_seconds, toUnixTimestamp(latest_at) AS latest_at
     FROM ${table}`,
  );
  for (const r of rows) {
    r.closed_exposure = Number(r.closed_exposure);
    r.ttr_sum = Number(r.ttr_sum);
    r.ttr_count = Number(r.ttr_count);
  }
  const highest = await highestOpen(store, rows, changes);
  const byTeam = new Map<string, Row[]>([['', rows]]);
  for (const r of rows) {
    for (const team of r.teams) {
      const list = byTeam.get(team) ?? [];
      list.push(r);
      byTeam.set(team, list);
    }
  }
  const shares = new Map<string, Share>();
  const none = shareOf([], highest);
  return (team) => {
    let share = shares.get(team);
    if (!share) {
      share = byTeam.has(team) ? shareOf(byTeam.get(team)!, highest) : none;
      shares.set(team, share);
    }
    return share;
  };
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
