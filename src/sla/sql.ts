import { SEVERITIES } from '../domain/severity.js';
import type { Sql } from '../filters/sql.js';
import { slaSeconds, type SlaPolicy } from './policy.js';

/**
 * SQL fragments of SPEC §12.1 over the columns of `findings` (and its team copy): the period
 * arrays found_at/fixed_at (fixed_at = NEVER while open) and the severity of the current score.
 * The policy is bound as a map severity → seconds; a severity missing from it has no SLA.
 */

const POLICY = '{slaSeconds:Map(String, Int64)}';

/** The parameters every fragment below reads. */
export function slaParams(policy: SlaPolicy): Record<string, unknown> {
  const seconds: Record<string, number> = {};
  for (const s of SEVERITIES) {
    const allowed = slaSeconds(policy, s);
    if (allowed !== undefined) seconds[s] = allowed;
  }
  return { slaSeconds: seconds };
}

const T = (name: string) => `toInt64({${name}:DateTime('UTC')})`;
const applies = `mapContains(${POLICY}, toString(severity))`;
const allowed = `${POLICY}[toString(severity)]`;

export const sla = {
  /** The finding's severity has an SLA. */
  applies,
  /** Seconds allowed to the finding's periods (0 without an SLA: guard with `applies`). */
  allowed,
  /** A period (f, x) is OPEN at T and T ≥ its deadline; only meaningful where `applies`. */
  periodBreachedAt: (t: string) => `f <= {${t}:DateTime('UTC')} AND {${t}:DateTime('UTC')} < x AND ${T(t)} >= toInt64(f) + ${allowed}`,
  /** A closed period (f, x) ended by its deadline. */
  periodFixedWithin: `toInt64(x) <= toInt64(f) + ${allowed}`,
  /** SPEC §12.1: the finding's period OPEN at T is breached. */
  breachedAt: (t: string) => `(${applies} AND arrayExists((f, x) -> ${sla.periodBreachedAt(t)}, found_at, fixed_at))`,
  /** SPEC §12.1 `sla=within`: OPEN at T and not breached (a severity without SLA is never breached). */
  withinAt: (t: string) =>
    `arrayExists((f, x) -> f <= {${t}:DateTime('UTC')} AND {${t}:DateTime('UTC')} < x
      AND NOT (${applies} AND ${T(t)} >= toInt64(f) + ${allowed}), found_at, fixed_at)`,
};

/** The `sla=` filter of findings lists at the reference instant bound as `t` (SPEC §12.1). */
export function slaFilter(state: 'breached' | 'within', policy: SlaPolicy, t: string): Sql {
  return { where: [state === 'breached' ? sla.breachedAt(t) : sla.withinAt(t)], params: slaParams(policy) };
}
