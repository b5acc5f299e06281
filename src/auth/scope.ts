import type { Context } from 'koa';
import { dbErrors } from '../errors.js';
import type { Sql } from '../filters/sql.js';
import type { Caller } from './tokens.js';

/**
 * What a database API caller may see (SPEC §5.1). Without DB_API_AUTH, and for admins, everything;
 * otherwise the targets of the caller's teams, their findings, sources and events, and the issues
 * with a finding on them. Every read route takes the request's scope from `ctx.state.scope`
 * (set by src/auth/db-api.ts) and applies it in one of three ways:
 *
 * - findings lists, GET /targets and the statistics that take team filters: `withinScope` turns the
 *   scope into their own `team`/`teams` filters (a request without them gets the caller's teams; a
 *   request naming a team the caller lacks is 403), so lists, totals, cache keys and statistics are
 *   those of the caller's teams, exactly as an admin asking with `teams=` sees them;
 * - the lists and statistics without team filters (issues, sources, events, sub-lists by parent,
 *   MTTR, /stats/size; /stats/issues takes the caller's teams as filters): a condition added to
 *   their SQL on a target id (`targetsInScope`), a finding id (`findingsInScope`) or an issue id
 *   (`issuesInScope`), with bound parameters;
 * - single resources: 404 outside the scope, the answer of an unknown id, so existence does not
 *   leak — findings and targets by `canSee` on the teams of their target, issues and sources by the
 *   conditions above.
 */

export type CallerScope = { readonly all: true } | { readonly all: false; readonly teams: readonly string[] };

/** No restriction: admins, and every request when the database API is open. */
export const EVERYTHING: CallerScope = { all: true };

export function scopeOfCaller(caller: Caller): CallerScope {
  return caller.admin ? EVERYTHING : { all: false, teams: [...new Set(caller.teams)] };
}

/** Writes (POST /checks, POST /targets, POST /imports/…) need admin or the `ingest` scope. */
export const mayWrite = (caller: Caller) => caller.admin || caller.scopes.includes('ingest');

/** The scope of a request (set for every route but the open ones; missing means a wiring bug). */
export function scopeOf(ctx: Context): CallerScope {
  const scope = ctx.state.scope as CallerScope | undefined;
  if (scope === undefined) throw new Error(`no caller scope on ${ctx.method} ${ctx.path}`);
  return scope;
}

interface TeamFilters {
  team?: string | undefined;
  teams?: string[] | undefined;
}

/**
 * The team filters of a request within the scope: those requested when they name only the caller's
 * teams (403 otherwise), else the caller's teams — one team as `team` (its clustered copy is read,
 * as for `team=`), several as `teams` (each finding once), none as `teams: []` (nothing).
 */
export function withinScope<F extends TeamFilters>(scope: CallerScope, f: F): F {
  if (scope.all) return f;
  const requested = [...(f.team !== undefined ? [f.team] : []), ...(f.teams ?? [])];
  if (requested.length > 0) {
    if (!requested.every((t) => scope.teams.includes(t))) throw dbErrors.forbidden();
    return f;
  }
  return scope.teams.length === 1 ? { ...f, team: scope.teams[0] } : { ...f, teams: [...scope.teams] };
}

/**
 * The targets in scope as a condition on `column` (a target id): nothing to add for everything,
 * no target for a caller without teams.
 */
export function targetsInScope(scope: CallerScope, column = 'target_id'): Sql {
  if (scope.all) return { where: [], params: {} };
  if (scope.teams.length === 0) return { where: ['0'], params: {} };
  return {
    where: [`${column} IN (SELECT target_id FROM target_teams WHERE team IN {visibleTeams:Array(String)})`],
    params: { visibleTeams: scope.teams },
  };
}

/** The findings in scope as a condition on `column` (a finding id). */
export const findingsInScope = (scope: CallerScope, column = 'id') => throughFindings(scope, column, 'id');

/** The issues in scope (with a finding on a target in scope) as a condition on `column` (an issue id). */
export const issuesInScope = (scope: CallerScope, column = 'id') => throughFindings(scope, column, 'issue_id');

function throughFindings(scope: CallerScope, column: string, selected: 'id' | 'issue_id'): Sql {
  const targets = targetsInScope(scope);
  if (scope.all || scope.teams.length === 0) return targets; // everything, or nothing
  return { where: [`${column} IN (SELECT ${selected} FROM findings WHERE ${targets.where.join(' AND ')})`], params: targets.params };
}

/** Whether a single resource whose target has `teams` is in scope. */
export const canSee = (scope: CallerScope, teams: readonly string[]) => scope.all || teams.some((t) => scope.teams.includes(t));
