import type { Sql } from '../filters/sql.js';
import type { Store } from '../storage/gateway.js';
import { activeAtParams, activeDecisionsAt, notSuppressedAt, suppressedAt } from './active.js';
import { decisionsMayExist } from './presence.js';

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

/** Rows (target_id, id) not suppressed at `t`, unless includeSuppressed. */
export async function unsuppressed(store: Store, f: SuppressionFilter, t: number): Promise<Sql> {
  if (!(await applies(store, f))) return NONE;
  return { where: [notSuppressedAt(PARAM)], params: activeAtParams(PARAM, t) };
}

/**
 * Rows suppressed at `t`, to subtract from materialized counters (which know nothing of
 * decisions); undefined when there is nothing to subtract.
 */
export async function suppressedOnly(store: Store, f: SuppressionFilter, t: number): Promise<Sql | undefined> {
  if (!(await applies(store, f))) return undefined;
  return { where: [suppressedAt(PARAM)], params: activeAtParams(PARAM, t) };
}

/** The targets with a finding suppressed at `t` (see suppressedOnly), as a condition on `column`. */
export const targetsWithSuppressed = (column: string) => `${column} IN (SELECT target_id FROM (${activeDecisionsAt(PARAM)}))`;

/** `decision=` of findings lists (SPEC §12.3): findings by the decision active at `t`. */
export async function decisionSelection(store: Store, filter: DecisionFilter | undefined, t: number): Promise<Sql> {
  if (filter === undefined) return NONE;
  if (!(await decisionsMayExist(store))) return filter === 'none' ? NONE : { where: ['0'], params: {} };
  const params = activeAtParams(PARAM, t);
  if (filter === 'none') return { where: [notSuppressedAt(PARAM)], params };
  if (filter === 'any') return { where: [suppressedAt(PARAM)], params };
  return {
    where: [`(target_id, id) IN (SELECT target_id, finding_id FROM (${activeDecisionsAt(PARAM)}) WHERE decision = {supDecision:String})`],
    params: { ...params, supDecision: filter },
  };
}
