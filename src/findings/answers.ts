import type { Context } from 'koa';
import { type CallerScope, canSee, scopeOf, targetsInScope, withinScope } from '../auth/scope.js';
import { answerCached, normalisedParams } from '../cache/response-cache.js';
import { findingId } from '../domain/ids.js';
import { isUuid } from '../domain/uuid.js';
import { dbErrors } from '../errors.js';
import type { FindingFilters, Paging } from '../filters/params.js';
import { merge } from '../filters/sql.js';
import { type FindingBase, findingPage, findingsByKeys } from './page.js';
import { findingKeys, findingOfIssueOnTarget, meanTtrDays, mttrScope } from './queries.js';
import { renderFindings } from './render.js';
import type { ApiContext } from '../api-context.js';
import { issuesOfTarget } from '../issues/queries.js';
import { round2 } from '../stats/numbers.js';
import { emptyPage } from '../storage/paged.js';
import { targetsOfIssue } from '../targets/queries.js';

/**
 * What the requests that read findings answer, whatever the parent in their path (SPEC §6.2–§6.5,
 * §6.8): findings lists, single findings, a finding by issue and target, per-entity MTTR, the
 * targets of an issue and the issues of a target. The routers of this folder call these; these
 * call the queries of findings and of the entities they hang off.
 */

/** The teams whose targets alone a list with these filters reads (undefined: every target's). */
const teamsRead = (f: FindingFilters): string[] | undefined =>
  f.team === undefined && f.teams === undefined ? undefined : [...(f.team !== undefined ? [f.team] : []), ...(f.teams ?? [])];

/**
 * A findings list for a base (all, an issue's, a target's, a source's) with the filters of SPEC
 * §5.5, answered through the response cache: a page costs the engine one to three statements (see
 * src/findings/page.ts), a cached one a Redis round trip. Exposures run to "now", so entries also
 * expire after the cache's clock TTL. The caller's scope becomes its team filters (withinScope,
 * 403 for a team it lacks) before the key is made: the key holds everything the answer depends on,
 * so callers share an entry only when they asked for the same findings. No base: an unknown parent.
 */
export async function answerFindingList(
  ctx: Context,
  api: ApiContext,
  base: FindingBase | undefined,
  requested: FindingFilters,
  page: Paging,
) {
  // The policy judges `sla=` (and only joins the filters with it: an unfiltered list keeps its kept total).
  const scoped = withinScope(scopeOf(ctx), requested);
  const filters = scoped.sla !== undefined ? { ...scoped, slaPolicy: api.slaPolicy } : scoped;
  const request = {
    endpoint: 'findings',
    scope: JSON.stringify(base ?? null),
    params: normalisedParams({ ...filters, ...page }),
    clockDependent: true,
    // A team filter (the caller's own, within its scope) limits the list to those teams' targets.
    teams: teamsRead(filters),
  };
  await answerCached(ctx, api.cache, request, async () => {
    const now = api.now();
    if (!base) return { pagination: emptyPage(page), findings: [] };
    const result = await findingPage(api.store, api.suppression, base, filters, page, now);
    const at = filters.atDate !== undefined ? { t: filters.atDate, atDate: true } : { t: now, atDate: false };
    return { pagination: result.pagination, findings: renderFindings(result.rows, { ...at, slaPolicy: api.slaPolicy }) };
  });
}

/** One finding at now, or 404 (SPEC §6.2), also when its target is outside the caller's scope. */
export async function oneFinding(api: ApiContext, scope: CallerScope, id: string | undefined) {
  if (!id || !isUuid(id)) throw dbErrors.notFound();
  const [row] = await findingsByKeys(api.store, await findingKeys(api.store, [id]), { t: api.now(), suppression: api.suppression });
  if (!row || !canSee(scope, row.teams)) throw dbErrors.notFound();
  const [finding] = renderFindings([row], { t: api.now(), atDate: false, slaPolicy: api.slaPolicy });
  return { finding };
}

/**
 * The finding for an issue and a target (SPEC §6.4/§6.5), optionally for one affected resource;
 * 404 outside the caller's scope.
 */
export async function issueTargetFinding(api: ApiContext, scope: CallerScope, issueId: string, targetIdValue: string, resource?: string) {
  if (!isUuid(issueId) || !isUuid(targetIdValue)) throw dbErrors.notFound();
  const id =
    resource !== undefined ? findingId(targetIdValue, issueId, resource) : await findingOfIssueOnTarget(api.store, issueId, targetIdValue);
  return oneFinding(api, scope, id);
}

/** Whose MTTR (SPEC §6.8): findings of a base, or of a source's whole family; none for an unknown entity. */
type MttrOf = { base: FindingBase } | { familyId: string } | undefined;

/**
 * Per-entity MTTR in days, rounded to 2 decimals; 404 without closed periods (SPEC §6.8). Only the
 * findings in the caller's scope count.
 */
export async function answerMttr(api: ApiContext, scope: CallerScope, of: MttrOf) {
  const where = of === undefined ? undefined : 'base' in of ? mttrScope.base(of.base) : mttrScope.family(of.familyId);
  const days = where ? await meanTtrDays(api.store, merge(where, targetsInScope(scope))) : undefined;
  if (days === undefined) throw dbErrors.notFound();
  return { mttr: round2(days) };
}

/** GET /issues/{id}/targets (SPEC §6.4): the targets in scope with a finding of the issue. */
export async function targetsOfIssueList(api: ApiContext, scope: CallerScope, issueId: string, page: Paging) {
  if (!isUuid(issueId)) return { pagination: emptyPage(page), targets: [] };
  const result = await targetsOfIssue(api.store, issueId, page, targetsInScope(scope, 'id'));
  return { pagination: result.pagination, targets: result.rows };
}

/** GET /targets/{id}/issues (SPEC §6.5): the issues with a finding on the target, when it is in scope. */
export async function issuesOfTargetList(api: ApiContext, scope: CallerScope, targetIdValue: string, page: Paging) {
  if (!isUuid(targetIdValue)) return { pagination: emptyPage(page), issues: [] };
  const result = await issuesOfTarget(api.store, targetIdValue, page, targetsInScope(scope));
  return { pagination: result.pagination, issues: result.rows };
}
