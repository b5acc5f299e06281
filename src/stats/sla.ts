import { referenceInstant, shareAtNow, signed, signedRows, withSuppressedRows } from '../decisions/suppression.js';
import { NEVER } from '../domain/time.js';
import { SEVERITIES, type BySeverity, type Severity } from '../domain/severity.js';
import { findingsIn, labelsAndScores, merge, type Sql, sqlAt, sqlTime, whereClause } from '../filters/sql.js';
import type { SlaPolicy } from '../sla/policy.js';
import { current, period, slaParams } from '../sla/sql.js';
import type { Store } from '../storage/gateway.js';
import type { StatFilters } from './filters.js';

/**
 * SPEC §12.2: findings in scope OPEN and breached at T (now or atDate), and the closed periods
 * fixed — in [L, U) with a range, else before T — and of those the ones fixed within their SLA,
 * by severity of the current score. One pass of the engine over the scope's period arrays. Findings
 * suppressed by a triage decision at the reference instant (T, or a range's end) are subtracted in
 * the same statement unless includeSuppressed (§12.3).
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

export async function slaStats(store: Store, f: StatFilters, now: number, policy: SlaPolicy): Promise<SlaStats> {
  const ranged = f.minDate !== undefined || f.maxDateEnd !== undefined;
  if (f.atDate === undefined && !ranged) {
    const found = await slaNow(store, f, now, policy);
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
  // One row per period. Periods never overlap, so a finding has at most one OPEN at T: the open
  // periods count findings.
  const found = await withSuppressedRows(store, f, referenceInstant(f, now), (suppressed) => {
    const rows = signedRows(findingsIn(f), ['severity', 'found_at', 'fixed_at', 'score', 'issue_id'], suppressed);
    const sql = merge(rows.scope, labelsAndScores(f), bound);
    const open = period.openAt('slaAt');
    return store.query<Row>(
      `SELECT severity,
              ${signed.countIf(rows, open)} AS open,
              ${signed.countIf(rows, `${open} AND ${period.pastDeadlineAt('slaAt')}`)} AS breached,
              ${signed.countIf(rows, fixedWhen)} AS fixed,
              ${signed.countIf(rows, `${fixedWhen} AND ${period.fixedWithin}`)} AS fixed_within
       FROM (SELECT severity, found_at, fixed_at${rows.sign === '1' ? '' : ', sign'} FROM ${rows.from} ${whereClause(sql)})
       ARRAY JOIN found_at AS f, fixed_at AS x
       GROUP BY severity`,
      sql.params,
      suppressed?.options,
    );
  });
  return summarise(found, policy);
}

/**
 * The same at T = now from each finding's scalar columns and closed periods' durations (src/sla/sql.ts
 * `current`), without unnesting its periods; undefined when a finding in scope has an instant at or
 * after now (a report from the future), for which only its periods tell.
 */
async function slaNow(store: Store, f: StatFilters, now: number, policy: SlaPolicy): Promise<Row[] | undefined> {
  const found = await withSuppressedRows(store, f, now, async (suppressed) => {
    // With the scope's share at hand, it is taken after the statement.
    const share = shareAtNow(suppressed, f, now);
    const rows = signedRows(
      findingsIn(f),
      ['severity', 'status', 'last_found_at', 'fix_seconds', 'score', 'issue_id'],
      share ? undefined : suppressed,
    );
    const sql = merge(rows.scope, labelsAndScores(f), { where: [], params: { ...slaParams(policy), slaAt: sqlAt(now) } });
    const found = await store.query<Row & { ahead: number }>(
      `SELECT severity,
              ${signed.countIf(rows, "status = 'OPEN'")} AS open,
              ${signed.countIf(rows, current.breachedAt('slaAt'))} AS breached,
              ${signed.sum(rows, 'length(fix_seconds)')} AS fixed,
              ${signed.sum(rows, current.fixedWithin)} AS fixed_within,
              max(${current.latest}) >= {slaAt:DateTime('UTC')} AS ahead
       FROM ${rows.from} ${whereClause(sql)}
       GROUP BY severity`,
      sql.params,
      suppressed?.options,
    );
    if (!share) return found;
    return found.map((r) => {
      const less = share.sla(r.severity, now, policy);
      return {
        ...r,
        open: Number(r.open) - less.open,
        breached: Number(r.breached) - less.breached,
        fixed: Number(r.fixed) - less.fixed,
        fixed_within: Number(r.fixed_within) - less.fixed_within,
      };
    });
  });
  return found.some((r) => Number(r.ahead) !== 0) ? undefined : found;
}

/** Totals and ratios of SPEC §12.2: fixed_within and compliance cover the severities with an SLA. */
function summarise(rows: Row[], policy: SlaPolicy): SlaStats {
  const withSla = SEVERITIES.filter((s) => policy[s] !== null);
  const of = (s: Severity, key: Exclude<keyof Row, 'severity'>) => rows.find((r) => r.severity === s)?.[key] ?? 0;
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
