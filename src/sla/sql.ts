import { slaSeconds, type SlaPolicy } from './policy.js';

/**
 * SQL fragments of SPEC §12.1 over the columns of `findings` (and its team copy): the period
 * arrays found_at/fixed_at (fixed_at = NEVER while open) and the severity of the current score.
 * The policy is bound as the seconds allowed per severity, indexed by the value of the severity
 * enum (sql/0005_findings.sql: informational 0, low 1, medium 2, high 3, critical 4) — arithmetic
 * per row rather than a lookup by name; 0 means no SLA (a policy's days are at least 1).
 */

const ENUM_ORDER = ['informational', 'low', 'medium', 'high', 'critical'] as const;

/** The parameters the conditions below read. */
export function slaParams(policy: SlaPolicy): Record<string, unknown> {
  return { slaSeconds: ENUM_ORDER.map((s) => slaSeconds(policy, s) ?? 0) };
}

/**
 * At T = now, per severity enum value: the latest start of an OPEN period that is breached at T
 * (T − the SLA), and the longest closed period fixed within its SLA (the SLA); −1 where there is
 * none (no SLA), which no instant or duration is at most.
 */
export function slaBoundsAt(policy: SlaPolicy, t: number): { slaBreachedUpTo: number[]; slaWithinUpTo: number[] } {
  const seconds = ENUM_ORDER.map((s) => slaSeconds(policy, s));
  return {
    slaBreachedUpTo: seconds.map((d) => (d === undefined ? -1 : t - d)),
    slaWithinUpTo: seconds.map((d) => (d === undefined ? -1 : d)),
  };
}

/** A bound of slaBoundsAt for the row's (or group's) severity. */
export const boundOf = (param: 'slaBreachedUpTo' | 'slaWithinUpTo') => `arrayElement({${param}:Array(Int64)}, toUInt8(severity) + 1)`;

/** Seconds allowed to the finding's periods by the severity of its current score; 0: no SLA. */
const allowed = `arrayElement({slaSeconds:Array(Int64)}, toUInt8(severity) + 1)`;

/**
 * Conditions on one OPEN period (f = found_at, x = fixed_at, NEVER while open) of a finding row,
 * at the reference instant bound as `t`: the lists test them inside arrayExists, /stats/sla counts
 * them over the periods unnested.
 */
export const period = {
  openAt: (t: string) => `f <= {${t}:DateTime('UTC')} AND {${t}:DateTime('UTC')} < x`,
  /** T ≥ the deadline (found_at + the severity's SLA); never without an SLA. */
  pastDeadlineAt: (t: string) => `${allowed} > 0 AND toInt64({${t}:DateTime('UTC')}) >= toInt64(f) + ${allowed}`,
  /** A closed period ended by its deadline; never without an SLA. */
  fixedWithin: `${allowed} > 0 AND toInt64(x) <= toInt64(f) + ${allowed}`,
};
