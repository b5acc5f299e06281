import Router from '@koa/router';
import type { Context } from 'koa';
import { canSee, findingsInScope, scopeOf, targetsInScope, withinScope, type CallerScope } from '../auth/scope.js';
import { answerCached, normalisedParams } from '../cache/response-cache.js';
import { isUuid } from '../domain/uuid.js';
import { dbErrors } from '../errors.js';
import { findingListQuery, pageQuery, type FindingFilters, type Paging } from '../filters/params.js';
import type { ApiContext } from '../http/context.js';
import { round2 } from '../stats/numbers.js';
import { merge } from '../filters/sql.js';
import { emptyPage } from '../storage/paged.js';
import { eventPage, findingKeys, findingPage, findingsByKeys, meanTtrDays, mttrScope, type FindingBase } from './queries.js';
import { renderEvent, renderFindings } from './render.js';

/**
 * A findings list for a base (all, an issue's, a target's, a source's) with the filters of SPEC
 * §5.5: used by /findings and every findings sub-list.
 */
async function listFindings(api: ApiContext, base: FindingBase | undefined, filters: FindingFilters, page: Paging) {
  const now = api.now();
  if (!base) return { pagination: emptyPage(page), findings: [] }; // an unknown parent
  const result = await findingPage(api.store, base, filters, page, now);
  const ref = filters.atDate !== undefined ? { t: filters.atDate, atDate: true } : { t: now, atDate: false };
  return { pagination: result.pagination, findings: renderFindings(result.rows, ref) };
}

/**
 * Answers a findings list through the response cache: a page costs the engine one to three
 * statements (see findingPage), a cached one a Redis round trip.
 * Exposures run to "now", so entries also expire after the cache's clock TTL.
 * The caller's scope becomes its team filters (withinScope, 403 for a team it lacks) before the
 * key is made: the key holds everything the answer depends on, so callers share an entry only
 * when they asked for the same findings.
 */
export async function answerFindingList(
  ctx: Context,
  api: ApiContext,
  base: FindingBase | undefined,
  requested: FindingFilters,
  page: Paging,
) {
  const filters = withinScope(scopeOf(ctx), requested);
  const request = {
    endpoint: 'findings',
    scope: JSON.stringify(base ?? null),
    params: normalisedParams({ ...filters, ...page }),
    clockDependent: true,
  };
  await answerCached(ctx, api.cache, request, () => listFindings(api, base, filters, page));
}

/** One finding at now, or 404 (SPEC §6.2), also when its target is outside the caller's scope. */
export async function oneFinding(api: ApiContext, scope: CallerScope, id: string | undefined) {
  if (!id || !isUuid(id)) throw dbErrors.notFound();
  const [row] = await findingsByKeys(api.store, await findingKeys(api.store, [id]));
  if (!row || !canSee(scope, row.teams)) throw dbErrors.notFound();
  const [finding] = renderFindings([row], { t: api.now(), atDate: false });
  return { finding };
}

/**
 * Per-entity MTTR in days, rounded to 2 decimals; 404 without closed periods (SPEC §6.8). Only the
 * findings in the caller's scope count.
 */
export async function mttrResponse(api: ApiContext, scope: CallerScope, where: Parameters<typeof meanTtrDays>[1] | undefined) {
  const days = where ? await meanTtrDays(api.store, merge(where, targetsInScope(scope))) : undefined;
  if (days === undefined) throw dbErrors.notFound();
  return { mttr: round2(days) };
}

export function findingRoutes(api: ApiContext): Router {
  const router = new Router();

  router.get('/findings', async (ctx) => {
    const { filters, page } = findingListQuery(ctx.query, api);
    await answerFindingList(ctx, api, {}, filters, page);
  });

  router.get('/findings/:id', async (ctx) => {
    ctx.body = await oneFinding(api, scopeOf(ctx), ctx.params.id);
  });

  router.get('/findings/:id/events', async (ctx) => {
    const page = pageQuery(ctx.query, api);
    const id = ctx.params.id!;
    if (!isUuid(id)) {
      ctx.body = { pagination: emptyPage(page), events: [] };
      return;
    }
    const result = await eventPage(api.store, id, page, findingsInScope(scopeOf(ctx), 'finding_id'));
    ctx.body = { pagination: result.pagination, events: result.rows.map(renderEvent) };
  });

  router.get('/findings/:id/mttr', async (ctx) => {
    const id = ctx.params.id!;
    ctx.body = await mttrResponse(api, scopeOf(ctx), isUuid(id) ? mttrScope.base({ ids: [id] }) : undefined);
  });

  return router;
}
