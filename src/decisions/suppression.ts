import type { Sql } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import { activeAtParams, activeDecisionsAt, notSuppressedAt, suppressedAt } from './active.js';
import { lapsedAt } from './lapses.js';
import { decisionsMayExist } from './presence.js';
import { suppressedSetAt } from './suppressed-sets.js';

/**
 * Suppression in statistics and lists (SPEC §7, §12.3): the conditions a statement adds so that
 * findings suppressed at its reference instant are left out (statistics) or selected by their
 * decision (`decision=` on lists). While the store holds no decision they are empty, or `0` for a
 * selection of decided findings: nothing is read for them.
 */

export interface SuppressionFilter {
  /** SPEC §12.3: count suppressed findings too. */
  includeSuppressed?: boolean | undefined;
}

export const DECISION_FILTERS = ['none', 'false_positive', 'accepted_risk', 'any'] as const;
export type DecisionFilter = (typeof DECISION_FILTERS)[number];

const NONE: Sql = { where: [], params: {} };
const PARAM = 'supAt';

/**
 * A statistic's reference instant (SPEC §4.1, §12.3): atDate's T, a range's end E = min(U, now)
 * (U the exclusive end of maxDate's day; only minDate: now), else now.
 */
export function referenceInstant(
  f: { atDate?: number | undefined; minDate?: number | undefined; maxDateEnd?: number | undefined },
  now: number,
): number {
  if (f.atDate !== undefined) return f.atDate;
  if (f.maxDateEnd !== undefined) return Math.min(f.maxDateEnd, now);
  return now;
}

/** Whether statements must consider decisions for this selection. */
async function applies(store: Store, f: SuppressionFilter): Promise<boolean> {
  return !f.includeSuppressed && (await decisionsMayExist(store));
}

/** The parameters of the statements' "active at t", with the lapsed false positives bound where they are known. */
async function activeAt(store: Store, t: number): Promise<{ params: Record<string, unknown>; bound: boolean }> {
  const lapsed = await lapsedAt(store, t);
  if (lapsed === undefined) return { params: activeAtParams(PARAM, t), bound: false };
  return { params: { ...activeAtParams(PARAM, t), [`${PARAM}Lapsed`]: lapsed }, bound: true };
}

/** Rows (target_id, id) not suppressed at `t`, unless includeSuppressed. */
export async function unsuppressed(store: Store, f: SuppressionFilter, t: number): Promise<Sql> {
  if (!(await applies(store, f))) return NONE;
  const set = await suppressedSetAt(store, t);
  if (set === null) return NONE;
  if (set) return { where: [`id NOT IN {${PARAM}Findings:Identifier}`], params: { [`${PARAM}Findings`]: set.findings } };
  const active = await activeAt(store, t);
  return { where: [notSuppressedAt(PARAM, active.bound)], params: active.params };
}

type Suppressed = Sql & {
  /** The targets with a finding suppressed at `t`, as a condition on `column` (same parameters). */
  targetsIn: (column: string) => string;
};

/**
 * Rows suppressed at `t`, to subtract from materialized counters (which know nothing of
 * decisions); undefined when there is nothing to subtract.
 */
export async function suppressedOnly(store: Store, f: SuppressionFilter, t: number): Promise<Suppressed | undefined> {
  if (!(await applies(store, f))) return undefined;
  const set = await suppressedSetAt(store, t);
  if (set === null) return undefined;
  if (set) {
    return {
      where: [`id IN {${PARAM}Findings:Identifier}`],
      params: { [`${PARAM}Findings`]: set.findings, [`${PARAM}Targets`]: set.targets },
      targetsIn: (column) => `${column} IN {${PARAM}Targets:Identifier}`,
    };
  }
  const active = await activeAt(store, t);
  return {
    where: [suppressedAt(PARAM, active.bound)],
    params: active.params,
    targetsIn: (column) => `${column} IN (SELECT target_id FROM (${activeDecisionsAt(PARAM, '1', active.bound)}))`,
  };
}

/** `decision=` of findings lists (SPEC §12.3): findings by the decision active at `t`. */
export async function decisionSelection(store: Store, filter: DecisionFilter | undefined, t: number): Promise<Sql> {
  if (filter === undefined) return NONE;
  if (!(await decisionsMayExist(store))) return filter === 'none' ? NONE : { where: ['0'], params: {} };
  const { params, bound } = await activeAt(store, t);
  if (filter === 'none') return { where: [notSuppressedAt(PARAM, bound)], params };
  if (filter === 'any') return { where: [suppressedAt(PARAM, bound)], params };
  return {
    where: [
      `(target_id, id) IN (SELECT target_id, finding_id FROM (${activeDecisionsAt(PARAM, '1', bound)}) WHERE decision = {supDecision:String})`,
    ],
    params: { ...params, supDecision: filter },
  };
}
