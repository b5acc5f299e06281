import Router from '@koa/router';
import type { Context } from 'koa';
import { scopeOf, targetsInScope, withinScope } from '../auth/scope.js';
import { checkDates, paging, parseQuery, toFilters, type FieldName } from '../filters/params.js';
import type { ApiContext } from '../api-context.js';
import { routePath } from '../http/endpoint.js';
import { assetStats } from './assets.js';
import { STAT_ENDPOINTS as E } from './endpoints.js';
import { findingCounts } from './counts.js';
import { currentExposureStats, totalExposureStats } from './exposure.js';
import type { StatFilters } from './filters.js';
import { issueStats } from './issues.js';
import { mttrStats } from './mttr.js';
import { slaStats } from './sla.js';
import { storeSize } from './size.js';

/**
 * The database API statistics (SPEC §6.7, §6.9, §7). Each endpoint validates the parameters its
 * declaration lists (endpoints.ts) and calls the statistic the metrics API calls too.
 */

/** The validated selection of a statistic, within the caller's scope (src/auth/scope.ts). */
function statFilters<K extends FieldName>(names: readonly K[], ctx: Context): StatFilters {
  const q = parseQuery(names, ctx.query);
  checkDates(q as Parameters<typeof checkDates>[0]);
  return withinScope(scopeOf(ctx), toFilters(q));
}

export function statsRoutes(api: ApiContext): Router {
  const router = new Router();

  router.get(routePath(E.open), async (ctx) => {
    ctx.body = { open_issues: await findingCounts(api.store, api.suppression, 'OPEN', statFilters(E.open.params, ctx), api.now()) };
  });

  router.get(routePath(E.fixed), async (ctx) => {
    ctx.body = { fixed_issues: await findingCounts(api.store, api.suppression, 'FIXED', statFilters(E.fixed.params, ctx), api.now()) };
  });

  router.get(routePath(E.issues), async (ctx) => {
    const q = parseQuery(E.issues.params, ctx.query, api);
    checkDates(q);
    // No team filters here: a scoped caller's teams come in as `team`/`teams`.
    const { atDate: _ignored, ...filters } = withinScope(scopeOf(ctx), toFilters(q));
    const result = await issueStats(api.store, api.suppression, filters, paging(q, api), api.now());
    ctx.body = { pagination: result.pagination, issues: result.rows };
  });

  router.get(routePath(E.mttr), async (ctx) => {
    const { atDate: _ignored, ...filters } = statFilters(E.mttr.params, ctx);
    ctx.body = { mttr: await mttrStats(api.store, api.suppression, filters, api.now()) };
  });

  router.get(routePath(E.size), async (ctx) => {
    parseQuery(E.size.params, ctx.query);
    ctx.body = { size: await storeSize(api.store, targetsInScope(scopeOf(ctx))) };
  });

  router.get(routePath(E.assets), async (ctx) => {
    ctx.body = { assets: await assetStats(api.store, api.suppression, statFilters(E.assets.params, ctx), api.now()) };
  });

  router.get(routePath(E.exposure), async (ctx) => {
    const f = statFilters(E.exposure.params, ctx);
    ctx.body = { exposure: await totalExposureStats(api.store, api.suppression, f, api.now()) };
  });

  router.get(routePath(E.currentExposure), async (ctx) => {
    const f = statFilters(E.currentExposure.params, ctx);
    ctx.body = { current_exposure: await currentExposureStats(api.store, api.suppression, f, api.now()) };
  });

  router.get(routePath(E.sla), async (ctx) => {
    ctx.body = { sla: await slaStats(api.store, api.suppression, statFilters(E.sla.params, ctx), api.now(), api.slaPolicy) };
  });

  return router;
}
