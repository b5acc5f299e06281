import { targetId } from '../domain/ids.js';
import { NEVER } from '../domain/time.js';
import type { FindingFilters } from './params.js';
import { DEFAULT_SLA_POLICY, type SlaFilter, type SlaPolicy } from '../sla/policy.js';
import { period, slaParams } from '../sla/sql.js';

/**
 * SQL fragments of the finding filters and of a finding's state at an instant (SPEC §4, §5.5),
 * written once and shared by every list and statistic of both APIs. Fragments read the columns of
 * `findings` (found_at/fixed_at period arrays, score, status, target_id, issue_id) and bind every
 * value as a parameter.
 */

export interface Sql {
  where: string[];
  params: Record<string, unknown>;
}

/**
 * ClickHouse DateTime('UTC') parameter text for an epoch second. Dates a client may send span years
 * 0001–9999 while DateTime spans 1970 to NEVER, and every stored instant lies in [0, NEVER): a
 * bound outside that span is clamped to its edge, which selects exactly the same periods.
 */
export const sqlTime = (epoch: number) => new Date(clampTime(epoch) * 1000).toISOString().slice(0, 19).replace('T', ' ');

/** The epoch second sqlTime binds: what the process compares where it evaluates the same conditions. */
export const clampTime = (epoch: number) => Math.min(Math.max(epoch, 0), NEVER);

/**
 * A reference instant T (atDate) as a parameter: clamped below NEVER so that periods still open
 * (fixed_at = NEVER) remain OPEN at a T beyond 2106. Exposures computed in SQL then run to that
 * edge instead of the literal far-future date.
 */
export const sqlAt = (epoch: number) => sqlTime(clampAt(epoch));

/** The epoch second sqlAt binds. */
export const clampAt = (epoch: number) => clampTime(Math.min(epoch, NEVER - 1));

const T = (name: string) => `{${name}:DateTime('UTC')}`;

/** The period arrays zipped: f = found_at, x = fixed_at (NEVER while open). */
export const state = {
  /** SPEC §4.2: F exists at T. */
  existsAt: (t: string) => `arrayExists(f -> f <= ${T(t)}, found_at)`,
  /** SPEC §4.2: F is OPEN at T. */
  openAt: (t: string) => `arrayExists((f, x) -> f <= ${T(t)} AND ${T(t)} < x, found_at, fixed_at)`,
  /** SPEC §4.2: whole hours OPEN up to T, over every period started by T. */
  totalExposureAt: (t: string) =>
    `intDiv(arraySum((f, x) -> if(f <= ${T(t)}, toInt64(least(x, ${T(t)})) - toInt64(f), 0), found_at, fixed_at), 3600)`,
  /** SPEC §4.2: whole hours since the start of the period containing T (only meaningful when OPEN at T). */
  currentExposureAt: (t: string) =>
    `intDiv(toInt64(${T(t)}) - toInt64(arrayMax(arrayFilter((f, x) -> f <= ${T(t)} AND ${T(t)} < x, found_at, fixed_at))), 3600)`,
  /**
   * The same two values at "now" from the precomputed columns. Exact whenever the last period began
   * before now (then every period did); otherwise (reports from the future) the array form is used.
   */
  totalExposureNow: (now: string) =>
    `if(last_found_at <= ${T(now)}, intDiv(toInt64(closed_exposure) + if(status = 'OPEN', toInt64(${T(now)}) - toInt64(last_found_at), 0), 3600), ${state.totalExposureAt(now)})`,
  currentExposureNow: (now: string) => `greatest(0, intDiv(toInt64(${T(now)}) - toInt64(last_found_at), 3600))`,
};

/** Rule 1 (SPEC §4.3): an OPEN period started in [L, U). */
const rule1 = `arrayExists(f -> f >= ${T('rangeL')} AND f < ${T('rangeU')}, found_at)`;
/** Rule 2 (SPEC §4.3): the last period started by E is closed, with L <= fixed_at <= E. */
const rule2 = `(arrayLastIndex(f -> f <= ${T('rangeE')}, found_at) AS last_started) > 0
      AND arrayElement(fixed_at, last_started) BETWEEN ${T('rangeL')} AND ${T('rangeE')}`;

export interface TimeFilter {
  status?: 'OPEN' | 'FIXED' | undefined;
  atDate?: number | undefined;
  minDate?: number | undefined;
  maxDateEnd?: number | undefined;
}

/**
 * Status and time (SPEC §5.5): current status without dates; state at T with atDate (existence
 * when no status); rules 1/2 with a range. `now` ends an open-ended FIXED range.
 */
export function statusAndTime(f: TimeFilter, now: number): Sql {
  const out: Sql = { where: [], params: {} };
  if (f.atDate !== undefined) {
    out.params.at = sqlAt(f.atDate);
    if (f.status === 'OPEN') out.where.push(state.openAt('at'));
    else if (f.status === 'FIXED') out.where.push(`${state.existsAt('at')} AND NOT ${state.openAt('at')}`);
    else out.where.push(state.existsAt('at'));
  } else if (f.minDate !== undefined || f.maxDateEnd !== undefined) {
    out.params.rangeL = sqlTime(f.minDate ?? 0);
    if (f.status === 'FIXED') {
      out.params.rangeE = sqlTime(f.maxDateEnd !== undefined ? f.maxDateEnd - 1 : now);
      out.where.push(rule2);
    } else {
      out.params.rangeU = sqlTime(f.maxDateEnd ?? NEVER);
      out.where.push(rule1);
    }
  } else if (f.status !== undefined) {
    out.params.status = f.status;
    out.where.push('status = {status:String}');
  }
  return out;
}

export interface Scope {
  team?: string | undefined;
  /** Targets of at least one of these teams; an empty list selects no target. */
  teams?: string[] | undefined;
  identifier?: string | undefined;
  identifierMatch?: boolean | undefined;
  identifiers?: string[] | undefined;
}

/**
 * Targets in scope (SPEC §5.5, §7): associated with `team`, with one of `teams`, whose identifier
 * contains (or equals) `identifier`, or is one of `identifiers`. A target id is UUIDv5 of its
 * identifier, so exact identifiers become ids without a lookup. Applies to `column`.
 */
export function targetScope(s: Scope, column = 'target_id'): Sql {
  const out: Sql = { where: [], params: {} };
  if (s.team !== undefined) {
    out.params.scopeTeam = s.team;
    out.where.push(`${column} IN (SELECT target_id FROM target_teams WHERE team = {scopeTeam:String})`);
  }
  if (s.teams !== undefined && s.teams.length > 0) {
    out.params.scopeTeams = s.teams;
    out.where.push(`${column} IN (SELECT target_id FROM target_teams WHERE team IN {scopeTeams:Array(String)})`);
  } else if (s.teams !== undefined) {
    // No team, no target: the scope of a caller without teams (src/auth/scope.ts). Requests never
    // bind an empty list: `teams=` is absent.
    out.where.push('0');
  }
  if (s.identifier !== undefined) {
    if (s.identifierMatch) {
      out.params.scopeIdentifierId = targetId(s.identifier);
      out.where.push(`${column} = {scopeIdentifierId:UUID}`);
    } else {
      out.params.scopeIdentifier = s.identifier;
      out.where.push(`${column} IN (SELECT id FROM targets WHERE position(identifier, {scopeIdentifier:String}) > 0)`);
    }
  }
  if (s.identifiers !== undefined && s.identifiers.length > 0) {
    out.params.scopeIdentifierIds = s.identifiers.map(targetId);
    out.where.push(`${column} IN {scopeIdentifierIds:Array(UUID)}`);
  }
  return out;
}

/** The rows a query reads (a FROM clause body) and the conditions selecting its scope among them. */
interface ScopedRows {
  from: string;
  scope: Sql;
  /**
   * The same rows in id order (SPEC §5.4), read only as far as a page by id needs: where the scope's
   * rows are stored in that order (a team's copy), its versions deduplicated as they are read (FINAL
   * would read the whole scope to deduplicate first), with the conditions left to apply to them.
   * Absent where rows are stored in another order.
   */
  inIdOrder?: { from: string; scope: Sql };
}

/**
 * Tables per target and their copies clustered by team (sql/0009_team_copies.sql); team_findings
 * is sorted by id within a team, versions of a finding next to each other.
 */
const TEAM_COPIES = {
  'findings FINAL': {
    from: 'team_findings FINAL',
    inIdOrder: '(SELECT * FROM team_findings WHERE team = {scopeTeam:String} ORDER BY UUIDToNum(id), version DESC LIMIT 1 BY id)',
  },
  finding_counts: { from: 'team_finding_counts' },
} as const;

/**
 * Where rows in a scope are read: a single team's clustered copy holds exactly the rows of that
 * team's targets in one contiguous range, which costs a fraction of testing every row against the
 * team's set of targets. Several teams keep the set test on all rows, so a finding in two of them
 * counts once.
 */
function scopedRows(table: keyof typeof TEAM_COPIES, s: Scope): ScopedRows {
  if (s.team === undefined) return { from: table, scope: targetScope(s) };
  const team: Sql = { where: ['team = {scopeTeam:String}'], params: { scopeTeam: s.team } };
  const others = targetScope({ ...s, team: undefined });
  const copy: { from: string; inIdOrder?: string } = TEAM_COPIES[table];
  return {
    from: copy.from,
    scope: merge(team, others),
    ...(copy.inIdOrder ? { inIdOrder: { from: copy.inIdOrder, scope: merge({ where: [], params: team.params }, others) } } : {}),
  };
}

/** Findings (current versions) in scope. */
export const findingsIn = (s: Scope) => scopedRows('findings FINAL', s);
/** Materialized open/fixed counters per target (0006) in scope. */
export const countsIn = (s: Scope) => scopedRows('finding_counts', s);

export function labelsAndScores(f: { labels?: string[] | undefined; minScore?: number | undefined; maxScore?: number | undefined }): Sql {
  const out: Sql = { where: [], params: {} };
  if (f.labels !== undefined && f.labels.length > 0) {
    out.params.labels = f.labels;
    out.where.push('issue_id IN (SELECT id FROM issues_current WHERE hasAny(labels, {labels:Array(String)}))');
  }
  if (f.minScore !== undefined) {
    out.params.minScore = f.minScore;
    out.where.push('score >= {minScore:Float64}');
  }
  if (f.maxScore !== undefined) {
    out.params.maxScore = f.maxScore;
    out.where.push('score <= {maxScore:Float64}');
  }
  return out;
}

export function merge(...parts: Sql[]): Sql {
  return {
    where: parts.flatMap((p) => p.where),
    params: Object.assign({}, ...parts.map((p) => p.params)),
  };
}

export const whereClause = (sql: Sql) => (sql.where.length > 0 ? `WHERE ${sql.where.join('\n  AND ')}` : '');

/** SPEC §12.1: the period OPEN at T is past its deadline (breached), or not (within). */
const breachedAt = (t: string) => `arrayExists((f, x) -> ${period.openAt(t)} AND ${period.pastDeadlineAt(t)}, found_at, fixed_at)`;
const withinAt = (t: string) => `arrayExists((f, x) -> ${period.openAt(t)} AND NOT (${period.pastDeadlineAt(t)}), found_at, fixed_at)`;

/**
 * The `sla=` filter of findings lists (SPEC §12.1) at the reference instant `at` (ClickHouse
 * DateTime text: atDate, or now); nothing without `sla`.
 */
export function slaCondition(f: { sla?: SlaFilter | undefined; slaPolicy?: SlaPolicy | undefined }, at: string): Sql {
  if (f.sla === undefined) return { where: [], params: {} };
  return {
    where: [f.sla === 'breached' ? breachedAt('slaAt') : withinAt('slaAt')],
    params: { ...slaParams(f.slaPolicy ?? DEFAULT_SLA_POLICY), slaAt: at },
  };
}

/** Findings lists' `summary` (beyond SPEC §5.5): the issue's summary contains the text, ignoring case. */
function issueSummary(f: { summary?: string | undefined }): Sql {
  if (f.summary === undefined) return { where: [], params: {} };
  return {
    where: ['issue_id IN (SELECT id FROM issues_current WHERE positionCaseInsensitiveUTF8(summary, {issueSummary:String}) > 0)'],
    params: { issueSummary: f.summary },
  };
}

/** All of SPEC §5.5 for findings lists. */
export function findingConditions(f: FindingFilters, now: number): ScopedRows {
  const rows = findingsIn(f);
  const filters = merge(labelsAndScores(f), issueSummary(f), statusAndTime(f, now), slaCondition(f, sqlAt(f.atDate ?? now)));
  return {
    from: rows.from,
    scope: merge(rows.scope, filters),
    ...(rows.inIdOrder ? { inIdOrder: { from: rows.inIdOrder.from, scope: merge(rows.inIdOrder.scope, filters) } } : {}),
  };
}
