import Router from '@koa/router';
import { findingsInScope, scopeOf } from '../auth/scope.js';
import { formatInstant, NEVER } from '../domain/time.js';
import { isUuid } from '../domain/uuid.js';
import { dbErrors } from '../errors.js';
import { findingListParser, paging, queryParser } from '../filters/params.js';
import type { ApiContext } from '../api-context.js';
import { routePath } from '../http/endpoint.js';
import { emptyPage } from '../storage/paged.js';
import { answerFindingList, answerMttr, oneFinding } from './answers.js';
import { FINDING_ENDPOINTS as E } from './endpoints.js';
import { eventPage, findingPeriods } from './queries.js';
import { renderEvent } from './render.js';

export function findingRoutes(api: ApiContext): Router {
  const router = new Router();
  const listQuery = findingListParser(api);
  const eventsQuery = queryParser(E.events.params, api);

  router.get(routePath(E.list), async (ctx) => {
    const { filters, page } = listQuery(ctx.query);
    await answerFindingList(ctx, api, {}, filters, page);
  });

  router.get(routePath(E.one), async (ctx) => {
    ctx.body = await oneFinding(api, scopeOf(ctx), ctx.params.finding_id);
  });

  router.get(routePath(E.events), async (ctx) => {
    const page = paging(eventsQuery(ctx.query), api);
    const id = ctx.params.finding_id!;
    if (!isUuid(id)) {
      ctx.body = { pagination: emptyPage(page), events: [] };
      return;
    }
    const result = await eventPage(api.store, id, page, findingsInScope(scopeOf(ctx), 'finding_id'));
    ctx.body = { pagination: result.pagination, events: result.rows.map(renderEvent) };
  });

  router.get(routePath(E.periods), async (ctx) => {
    const id = ctx.params.finding_id!;
    const periods = isUuid(id) ? await findingPeriods(api.store, id, findingsInScope(scopeOf(ctx))) : undefined;
    if (!periods) throw dbErrors.notFound();
    ctx.body = {
      periods: periods.map((p) => ({ found_at: formatInstant(p.found), fixed_at: p.fixed === NEVER ? null : formatInstant(p.fixed) })),
    };
  });

  router.get(routePath(E.mttr), async (ctx) => {
    const id = ctx.params.finding_id!;
    ctx.body = await answerMttr(api, scopeOf(ctx), isUuid(id) ? { base: { ids: [id] } } : undefined);
  });

  return router;
}
