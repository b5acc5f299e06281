import Router from '@koa/router';
import type { Context } from 'koa';
import { scopeOf, targetsInScope, withinScope } from '../auth/scope.js';
import { checkDates, paging, queryParser, toFilters, type FieldName } from '../filters/params.js';
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

/** The parser of a statistic's selection, built with the router: the validated selection within the caller's scope (src/auth/scope.ts). */
function statFilters<K extends FieldName>(names: readonly K[]): (ctx: Context) => StatFilters {
  const parse = queryParser(names);
  return (ctx) => {
    const q = parse(ctx.query);
    checkDates(q as Parameters<typeof checkDates>[0]);
    return withinScope(scopeOf(ctx), toFilters(q));
  };
}

/** Each statistic's parser of its selection. */
const selectionParsers = () => ({
  open: statFilters(E.open.params),
  fixed: statFilters(E.fixed.params),
  mttr: statFilters(E.mttr.params),
  assets: statFilters(E.assets.params),
  exposure: statFilters(E.exposure.params),
  currentExposure: statFilters(E.currentExposure.params),
  sla: statFilters(E.sla.params),
});

export function statsRoutes(api: ApiContext): Router {
  const router = new Router();
  const selection = selectionParsers();
  const issuesQuery = queryParser(E.issues.params, api);
  const sizeQuery = queryParser(E.size.params);

  router.get(routePath(E.open), async (ctx) => {
    ctx.body = { open_issues: await findingCounts(api.store, api.suppression, 'OPEN', selection.open(ctx), api.now()) };
  });

  router.get(routePath(E.fixed), async (ctx) => {
    ctx.body = { fixed_issues: await findingCounts(api.store, api.suppression, 'FIXED', selection.fixed(ctx), api.now()) };
  });

  router.get(routePath(E.issues), async (ctx) => {
    const q = issuesQuery(ctx.query);
    checkDates(q);
    // No team filters here: a scoped caller's teams come in as `team`/`teams`.
    const { atDate: _ignored, ...filters } = withinScope(scopeOf(ctx), toFilters(q));
    const result = await issueStats(api.store, api.suppression, filters, paging(q, api), api.now());
    ctx.body = { pagination: result.pagination, issues: result.rows };
  });

  router.get(routePath(E.mttr), async (ctx) => {
    const { atDate: _ignored, ...filters } = selection.mttr(ctx);
    ctx.body = { mttr: await mttrStats(api.store, api.suppression, filters, api.now()) };
  });

  router.get(routePath(E.size), async (ctx) => {
    sizeQuery(ctx.query);
    ctx.body = { size: await storeSize(api.store, targetsInScope(scopeOf(ctx))) };
  });

  router.get(routePath(E.assets), async (ctx) => {
    ctx.body = { assets: await assetStats(api.store, api.suppression, selection.assets(ctx), api.now()) };
  });

  router.get(routePath(E.exposure), async (ctx) => {
    const f = selection.exposure(ctx);
    ctx.body = { exposure: await totalExposureStats(api.store, api.suppression, f, api.now()) };
  });

  router.get(routePath(E.currentExposure), async (ctx) => {
    const f = selection.currentExposure(ctx);
    ctx.body = { current_exposure: await currentExposureStats(api.store, api.suppression, f, api.now()) };
  });

  router.get(routePath(E.sla), async (ctx) => {
    ctx.body = { sla: await slaStats(api.store, api.suppression, selection.sla(ctx), api.now(), api.slaPolicy) };
  });

  return router;
}
