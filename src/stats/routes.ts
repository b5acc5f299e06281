import Router from '@koa/router';
import type { Context } from 'koa';
import { scopeOf, targetsInScope, withinScope } from '../auth/scope.js';
import { checkDates, paging, parseQuery, toFilters, type FieldName } from '../filters/params.js';
import type { ApiContext } from '../http/context.js';
import { assetStats } from './assets.js';
import { findingCounts } from './counts.js';
import { currentExposureStats, totalExposureStats } from './exposure.js';
import type { StatFilters } from './filters.js';
import { issueStats } from './issues.js';
import { mttrStats } from './mttr.js';
import { slaStats } from './sla.js';
import { storeSize } from './size.js';

/**
 * The database API statistics (SPEC §6.7, §6.9, §7). Each endpoint validates the parameters it
 * accepts (atDate is validated everywhere, ignored where it means nothing) and calls the statistic
 * the metrics API calls too.
 */

const COUNT_PARAMS = [
  'atDate',
  'minDate',
  'maxDate',
  'minScore',
  'maxScore',
  'team',
  'teams',
  'identifiers',
  'labels',
  'includeSuppressed',
] as const;

/** The validated selection of a statistic, within the caller's scope (src/auth/scope.ts). */
export function statFilters<K extends FieldName>(names: readonly K[], ctx: Context): StatFilters {
  const q = parseQuery(names, ctx.query);
  checkDates(q as Parameters<typeof checkDates>[0]);
  return withinScope(scopeOf(ctx), toFilters(q));
}

export function statsRoutes(api: ApiContext): Router {
  const router = new Router();

  router.get('/stats/open', async (ctx) => {
    ctx.body = { open_issues: await findingCounts(api.store, 'OPEN', statFilters(COUNT_PARAMS, ctx), api.now()) };
  });

  router.get('/stats/fixed', async (ctx) => {
    ctx.body = { fixed_issues: await findingCounts(api.store, 'FIXED', statFilters(COUNT_PARAMS, ctx), api.now()) };
  });

  router.get('/stats/issues', async (ctx) => {
    const q = parseQuery(['page', 'size', 'atDate', 'minDate', 'maxDate', 'minScore', 'maxScore'], ctx.query, api);
    checkDates(q);
    // No team filters here: a scoped caller's teams come in as `team`/`teams`.
    const { atDate: _ignored, ...filters } = withinScope(scopeOf(ctx), toFilters(q));
    const result = await issueStats(api.store, filters, paging(q, api));
    ctx.body = { pagination: result.pagination, issues: result.rows };
  });

  router.get('/stats/mttr', async (ctx) => {
    const { atDate: _ignored, ...filters } = statFilters(
      ['atDate', 'minDate', 'maxDate', 'minScore', 'maxScore', 'team', 'teams', 'labels', 'includeSuppressed'],
      ctx,
    );
    ctx.body = { mttr: await mttrStats(api.store, filters, api.now()) };
  });

  router.get('/stats/size', async (ctx) => {
    ctx.body = { size: await storeSize(api.store, targetsInScope(scopeOf(ctx))) };
  });

  router.get('/stats/assets', async (ctx) => {
    ctx.body = {
      assets: await assetStats(api.store, statFilters(['team', 'teams', 'identifiers', 'labels', 'includeSuppressed'], ctx), api.now()),
    };
  });

  router.get('/stats/exposure', async (ctx) => {
    const f = statFilters(['atDate', 'minScore', 'maxScore', 'team', 'teams', 'includeSuppressed'], ctx);
    ctx.body = { exposure: await totalExposureStats(api.store, f, api.now()) };
  });

  router.get('/stats/exposure/current', async (ctx) => {
    const f = statFilters(['atDate', 'minScore', 'maxScore', 'team', 'teams', 'labels', 'includeSuppressed'], ctx);
    ctx.body = { current_exposure: await currentExposureStats(api.store, f, api.now()) };
  });

  router.get('/stats/sla', async (ctx) => {
    ctx.body = { sla: await slaStats(api.store, statFilters(COUNT_PARAMS, ctx), api.now(), api.slaPolicy) };
  });

  return router;
}
