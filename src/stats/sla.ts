import { referenceInstant, type Suppression } from '../decisions/suppression.js';
import { NEVER } from '../domain/time.js';
import { SEVERITIES, type BySeverity, type Severity } from '../domain/severity.js';
import { findingsIn, labelsAndScores, merge, type Sql, sqlAt, sqlTime, whereClause } from '../filters/sql.js';
import type { SlaPolicy } from '../sla/policy.js';
import { boundOf, period, slaBoundsAt, slaParams } from '../sla/sql.js';
import type { Store } from '../storage/gateway.js';
import type { StatFilters } from './filters.js';

/**
 * SPEC §12.2: findings in scope OPEN and breached at T (now or atDate), and the closed periods
 * fixed — in [L, U) with a range, else before T — and of those the ones fixed within their SLA,
 * by severity of the current score. One pass of the engine over the scope's period arrays. Findings
 * suppressed by a triage decision are left out unless includeSuppressed (§12.3): from open and
 * breached those suppressed at T, from fixed and fixed_within those suppressed at the range's end.
 */

type Totalled<T> = BySeverity<T> & { total: T };

export interface SlaStats {
  policy_days: BySeverity<number | null>;
  open: Totalled<number>;
  breached: Totalled<number>;
  fixed: Totalled<number>;
  fixed_within: Totalled<number | null>;
  compliance: Totalled<number | null>;
}

interface Row {
  severity: Severity;
  open: number;
  breached: number;
  fixed: number;
  fixed_within: number;
}

/** Rounded half away from zero at the fourth decimal (ratios are never negative). */
const round4 = (x: number) => Math.round(x * 10_000 + 1e-9) / 10_000;

export async function slaStats(store: Store, suppression: Suppression, f: StatFilters, now: number, policy: SlaPolicy): Promise<SlaStats> {
  const ranged = f.minDate !== undefined || f.maxDateEnd !== undefined;
  if (f.atDate === undefined && !ranged) {
    const found = await slaNow(store, suppression, f, now, policy);
    if (found) return summarise(found, policy);
  }
  const fixedWhen = ranged ? `x >= {slaFixedFrom:DateTime('UTC')} AND x < {slaFixedTo:DateTime('UTC')}` : `x < {slaAt:DateTime('UTC')}`;
  const bound: Sql = {
    where: [],
    params: {
      ...slaParams(policy),
      slaAt: sqlAt(f.atDate ?? now),
      ...(ranged ? { slaFixedFrom: sqlTime(f.minDate ?? 0), slaFixedTo: sqlTime(f.maxDateEnd ?? NEVER) } : {}),
    },
  };
  // SPEC §12.3: open and breached leave out the findings suppressed at T, fixed and fixed_within
  // those suppressed at the range's end E: one statement where both are the same instant.
  const T = f.atDate ?? now;
  const E = referenceInstant(f, now);
  const atT = await slaPeriods(store, f, bound, fixedWhen, await suppression.notSuppressedAt(f, T));
  if (E === T) return summarise(atT, policy);
  const atE = await slaPeriods(store, f, bound, fixedWhen, await suppression.notSuppressedAt(f, E));
  const fixedOf = (severity: Severity) => atE.find((r) => r.severity === severity);
  const rows = SEVERITIES.map((severity) => {
    const r = atT.find((x) => x.severity === severity);
    return {
      severity,
      open: r?.open ?? 0,
      breached: r?.breached ?? 0,
      fixed: fixedOf(severity)?.fixed ?? 0,
      fixed_within: fixedOf(severity)?.fixed_within ?? 0,
    };
  });
  return summarise(rows, policy);
}

/**
 * The counts of SPEC §12.2 over the scope's periods, of the findings `kept`: one row per period.
 * Periods never overlap, so a finding has at most one OPEN at T: the open periods count findings.
 */
async function slaPeriods(store: Store, f: StatFilters, bound: Sql, fixedWhen: string, kept: Sql | undefined): Promise<Row[]> {
  const { from, scope } = findingsIn(f);
  const sql = merge(scope, labelsAndScores(f), bound, ...(kept ? [kept] : []));
  const open = period.openAt('slaAt');
  return store.query<Row>(
    `SELECT severity,
            countIf(${open}) AS open,
            countIf(${open} AND ${period.pastDeadlineAt('slaAt')}) AS breached,
            countIf(${fixedWhen}) AS fixed,
            countIf(${fixedWhen} AND ${period.fixedWithin}) AS fixed_within
     FROM (SELECT severity, found_at, fixed_at FROM ${from} ${whereClause(sql)})
     ARRAY JOIN found_at AS f, fixed_at AS x
     GROUP BY severity`,
    sql.params,
  );
}

/**
 * The same at T = now without unnesting any finding's periods, from its status, last start, latest
 * instant and closed durations (`latest_at`, `fix_seconds`: sql/0017): per severity the engine
 * gathers the OPEN findings' last starts and the closed durations, then counts those at most the
 * severity's bound (src/sla/sql.ts `slaBoundsAt`), once per severity rather than per row. Exact
 * while every instant of the findings in scope is before now; undefined when one is not (a report
 * from the future of now), for which only the periods tell.
 */
async function slaNow(store: Store, suppression: Suppression, f: StatFilters, now: number, policy: SlaPolicy): Promise<Row[] | undefined> {
  const { from, scope } = findingsIn(f);
  const kept = await suppression.notSuppressedAt(f, now);
  const bounds = { where: [], params: { ...slaBoundsAt(policy, now), slaAt: sqlAt(now) } };
  const sql = merge(scope, labelsAndScores(f), bounds, ...(kept ? [kept] : []));
  const found = await store.query<Row & { ahead: number }>(
    `SELECT severity,
            length(opened) AS open,
            arrayCount(t -> toInt64(t) <= ${boundOf('slaBreachedUpTo')}, opened) AS breached,
            length(durations) AS fixed,
            arrayCount(d -> d <= ${boundOf('slaWithinUpTo')}, durations) AS fixed_within,
            latest >= {slaAt:DateTime('UTC')} AS ahead
     FROM (SELECT severity, groupArrayIf(last_found_at, status = 'OPEN') AS opened, groupArrayArray(fix_seconds) AS durations,
                  max(latest_at) AS latest
           FROM ${from} ${whereClause(sql)}
           GROUP BY severity)`,
    sql.params,
  );
  return found.some((r) => Number(r.ahead) !== 0) ? undefined : found;
}

/** Totals and ratios of SPEC §12.2: fixed_within and compliance cover the severities with an SLA. */
function summarise(rows: Row[], policy: SlaPolicy): SlaStats {
  const withSla = SEVERITIES.filter((s) => policy[s] !== null);
  const of = (s: Severity, key: Exclude<keyof Row, 'severity'>) => Number(rows.find((r) => r.severity === s)?.[key] ?? 0);
  const sum = (severities: readonly Severity[], key: Exclude<keyof Row, 'severity'>) => severities.reduce((n, s) => n + of(s, key), 0);
  const ratio = (within: number, fixed: number) => (fixed > 0 ? round4(within / fixed) : null);
  const bySeverity = <T>(value: (s: Severity) => T) => Object.fromEntries(SEVERITIES.map((s) => [s, value(s)])) as BySeverity<T>;
  const counted = (key: 'open' | 'breached' | 'fixed') => ({ ...bySeverity((s) => of(s, key)), total: sum(SEVERITIES, key) });
  const slaOnly = <T>(value: (s: Severity) => T) => bySeverity((s) => (policy[s] !== null ? value(s) : null));
  return {
    policy_days: { ...policy },
    open: counted('open'),
    breached: counted('breached'),
    fixed: counted('fixed'),
    fixed_within: { ...slaOnly((s) => of(s, 'fixed_within')), total: sum(withSla, 'fixed_within') },
    compliance: {
      ...slaOnly((s) => ratio(of(s, 'fixed_within'), of(s, 'fixed'))),
      total: ratio(sum(withSla, 'fixed_within'), sum(withSla, 'fixed')),
    },
  };
}
