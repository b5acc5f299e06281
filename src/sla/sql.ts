import type { Sql } from '../filters/sql.js';
import { DEFAULT_SLA_POLICY, type SlaFilter, slaSeconds, type SlaPolicy } from './policy.js';

/**
 * SQL fragments of SPEC §12.1 over the columns of `findings` (and its team copy): the period
 * arrays found_at/fixed_at (fixed_at = NEVER while open) and the severity of the current score.
 * The policy is bound as the seconds allowed per severity, indexed by the value of the severity
 * enum (sql/0005_findings.sql: informational 0, low 1, medium 2, high 3, critical 4) — arithmetic
 * per row rather than a lookup by name; 0 means no SLA (a policy's days are at least 1).
 */

const ENUM_ORDER = ['informational', 'low', 'medium', 'high', 'critical'] as const;

/** The parameters every fragment below reads. */
export function slaParams(policy: SlaPolicy): Record<string, unknown> {
  return { slaSeconds: ENUM_ORDER.map((s) => slaSeconds(policy, s) ?? 0) };
}

const T = (name: string) => `toInt64({${name}:DateTime('UTC')})`;
const allowed = `arrayElement({slaSeconds:Array(Int64)}, toUInt8(severity) + 1)`;
const applies = `${allowed} > 0`;

export const sla = {
  /** The finding's severity has an SLA. */
  applies,
  /** Seconds allowed to the finding's periods (0 without an SLA: guard with `applies`). */
  allowed,
  /** A period (f, x) is OPEN at T and T ≥ its deadline; only meaningful where `applies`. */
  periodBreachedAt: (t: string) => `f <= {${t}:DateTime('UTC')} AND {${t}:DateTime('UTC')} < x AND ${T(t)} >= toInt64(f) + ${allowed}`,
  /** SPEC §12.1: the finding's period OPEN at T is breached. */
  breachedAt: (t: string) => `(${applies} AND arrayExists((f, x) -> ${sla.periodBreachedAt(t)}, found_at, fixed_at))`,
  /** SPEC §12.1 `sla=within`: OPEN at T and not breached (a severity without SLA is never breached). */
  withinAt: (t: string) =>
    `arrayExists((f, x) -> f <= {${t}:DateTime('UTC')} AND {${t}:DateTime('UTC')} < x
      AND NOT (${applies} AND ${T(t)} >= toInt64(f) + ${allowed}), found_at, fixed_at)`,
};

/**
 * The `sla=` filter of findings lists (SPEC §12.1) at the reference instant `at` (ClickHouse
 * DateTime text: atDate, or now); nothing without `sla`.
 */
export function slaCondition(f: { sla?: SlaFilter | undefined; slaPolicy?: SlaPolicy | undefined }, at: string): Sql {
  if (f.sla === undefined) return { where: [], params: {} };
  return {
    where: [f.sla === 'breached' ? sla.breachedAt('slaAt') : sla.withinAt('slaAt')],
    params: { ...slaParams(f.slaPolicy ?? DEFAULT_SLA_POLICY), slaAt: at },
  };
}
