import { targetId } from '../domain/ids.js';
import { findingsIn, merge, type Scope, type Sql, targetScope, whereClause } from '../filters/sql.js';
import type { StatementOptions, Store } from '../storage/gateway.js';
import { DataChanged } from '../storage/store-errors.js';
import { activeAtParams, activeDecisionsAt, notSuppressedAt, suppressedAt } from './active.js';
import { lapsedAt } from './lapses.js';
import { decisionsMayExist } from './presence.js';
import { rowsCopyOf } from './suppressed-rows.js';
import type { Share, ShareSelection } from './suppressed-shares.js';
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

/**
 * What an additive statistic subtracts (SPEC §12.3): the rows, with the columns of `findings`, of
 * the findings in scope suppressed at T, and the options of the statement that reads them.
 */
export interface SuppressedRows {
  from: string;
  scope: Sql;
  options: StatementOptions;
  /**
   * Where the rows come from a copy that can tell the selection (its scope and the label and score
   * filters of the statistic's `f`): what they take from its current statistics
   * (suppressed-shares.ts), which a statement of a store without decisions, bound to the copy's
   * state (`options`), leaves for the process to take.
   */
  share?: Share;
}

/**
 * The suppressed rows of a scope at `t`, or undefined when there is nothing to subtract. Embedded,
 * from the copy of their rows (src/decisions/suppressed-rows.ts) while it is valid, else (or with
 * `inStatement`) read by the statement from the scope's findings.
 */
export async function suppressedRows(
  store: Store,
  f: Scope & SuppressionFilter,
  t: number,
  inStatement = false,
): Promise<SuppressedRows | undefined> {
  if (!(await applies(store, f))) return undefined;
  const set = await suppressedSetAt(store, t);
  if (set === null) return undefined;
  const rows = findingsIn(f);
  if (set === undefined) {
    const active = await activeAt(store, t);
    return {
      from: rows.from,
      scope: merge(rows.scope, { where: [suppressedAt(PARAM, active.bound)], params: active.params }),
      options: {},
    };
  }
  const copy = inStatement ? undefined : rowsCopyOf(store, set);
  if (!copy) {
    const ids = { where: [`id IN {${PARAM}Findings:Identifier}`], params: { [`${PARAM}Findings`]: set.findings } };
    return { from: rows.from, scope: merge(rows.scope, ids), options: {} };
  }
  // The copy holds each finding once, with its target's teams.
  const team: Sql =
    f.team === undefined ? { where: [], params: {} } : { where: ['has(teams, {scopeTeam:String})'], params: { scopeTeam: f.team } };
  const selection = shareSelection(f);
  return {
    from: copy.table,
    scope: merge(team, targetScope({ ...f, team: undefined })),
    options: { unchangedSince: copy.changes },
    ...(selection ? { share: copy.shares(selection) } : {}),
  };
}

/**
 * The selection of suppressed findings a share is counted over (suppressed-shares.ts): the scope,
 * and the label and score filters a statistic's `f` carries; undefined for a substring of
 * identifiers, which the copy cannot tell.
 */
function shareSelection(
  f: Scope & { labels?: string[] | undefined; minScore?: number | undefined; maxScore?: number | undefined },
): ShareSelection | undefined {
  if (f.identifier !== undefined && !f.identifierMatch) return undefined;
  const targets = [
    ...(f.identifier !== undefined ? [[targetId(f.identifier)]] : []),
    ...(f.identifiers?.length ? [f.identifiers.map(targetId)] : []),
  ];
  return {
    team: f.team,
    teams: f.teams,
    targets: targets.length > 0 ? targets : undefined,
    minScore: f.minScore,
    maxScore: f.maxScore,
    labels: f.labels?.length ? f.labels : undefined,
  };
}

/**
 * Runs a statistic's statement with the scope's suppressed rows at `t` (undefined: nothing to
 * subtract); once more, reading them in the statement, if the data changed after the copy it
 * relied on (the engine then refused the first statement).
 */
export async function withSuppressedRows<T>(
  store: Store,
  f: Scope & SuppressionFilter,
  t: number,
  statement: (rows: SuppressedRows | undefined) => Promise<T>,
): Promise<T> {
  try {
    return await statement(await suppressedRows(store, f, t));
  } catch (err) {
    if (!(err instanceof DataChanged)) throw err;
    return statement(await suppressedRows(store, f, t, true));
  }
}

/**
 * The share a statistic at now takes from its answer in the process (SuppressedRows.share): where
 * there is one, and every instant of the suppressed findings it covers is before now.
 */
export function shareAtNow(suppressed: SuppressedRows | undefined, now: number): Share | undefined {
  const share = suppressed?.share;
  return share && now > share.latest ? share : undefined;
}

/** The rows a statistic aggregates, as a FROM body and the conditions of its scope. */
export interface SignedRows {
  from: string;
  scope: Sql;
  /**
   * Each row's weight: `1`, or with suppressed findings the column `sign`, −1 on their rows (which
   * the selection's rows also hold), so that `sum(${sign})`, `sum(if(c, ${sign}, 0))` and
   * `sum(${sign} * v)` leave them out.
   */
  sign: string;
}

/** Aggregates over signed rows: the plain ones where no row is subtracted. */
export const signed = {
  count: (rows: SignedRows) => (rows.sign === '1' ? 'count()' : `sum(${rows.sign})`),
  countIf: (rows: SignedRows, condition: string) =>
    rows.sign === '1' ? `countIf(${condition})` : `sum(if(${condition}, ${rows.sign}, 0))`,
  sum: (rows: SignedRows, value: string) => (rows.sign === '1' ? `sum(${value})` : `sum(${rows.sign} * toInt64(${value}))`),
};

/**
 * The rows of a selection (`rows`, of which a statistic reads `columns`), plus the suppressed ones
 * with the weight −1: one UNION ALL of plain columns, whose conditions and aggregates the statistic
 * writes once over both (an aggregate per branch costs the engine its planning twice).
 */
export function signedRows(
  rows: { from: string; scope: Sql },
  columns: readonly string[],
  suppressed: SuppressedRows | undefined,
): SignedRows {
  if (!suppressed) return { ...rows, sign: '1' };
  const list = columns.join(', ');
  return {
    from: `(SELECT ${list}, toInt64(1) AS sign FROM ${rows.from} ${whereClause(rows.scope)}
            UNION ALL
            SELECT ${list}, toInt64(-1) AS sign FROM ${suppressed.from} ${whereClause(suppressed.scope)})`,
    scope: { where: [], params: { ...rows.scope.params, ...suppressed.scope.params } },
    sign: 'sign',
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
