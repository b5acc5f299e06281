import Router from '@koa/router';
import { answerFindingList, answerMttr, oneFinding } from '../answers.js';
import { findingsInScope, scopeOf } from '../auth/scope.js';
import { isUuid } from '../domain/uuid.js';
import { findingListQuery, pageQuery } from '../filters/params.js';
import type { ApiContext } from '../http/context.js';
import { emptyPage } from '../storage/paged.js';
import { eventPage } from './queries.js';
import { renderEvent } from './render.js';

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
    ctx.body = await answerMttr(api, scopeOf(ctx), isUuid(id) ? { base: { ids: [id] } } : undefined);
  });

  return router;
}
