import Router from '@koa/router';
import type { Context, Middleware } from 'koa';
import { isUuid } from '../domain/uuid.js';
import { assetStats } from '../stats/assets.js';
import { findingCounts } from '../stats/counts.js';
import { currentExposureStats, totalExposureStats } from '../stats/exposure.js';
import type { StatFilters } from '../stats/filters.js';
import { mttrStats } from '../stats/mttr.js';
import { openSeriesResponse } from '../stats/schema.js';
import { openSeries } from '../stats/series.js';
import { slaStats } from '../stats/sla.js';
import type { SlaPolicy } from '../sla/policy.js';
import type { Store } from '../storage/gateway.js';
import type { Suppression } from '../decisions/suppression.js';
import { answerCached, normalisedParams, type ResponseCache } from '../cache/response-cache.js';
import { STAT_ENDPOINTS } from '../stats/endpoints.js';
import { routePath } from '../http/endpoint.js';
import { type MetricDeclaration, metricEndpoints } from './endpoints.js';
import { authorizeGlobal, authorizeTeam, callerOf } from './auth.js';
import { metricsErrors } from '../errors.js';
import { metricQuery, requestedTeams } from './params.js';

/**
 * The metric endpoints (SPEC §8.3): each metric per team (`/teams/{team_id}/stats/…`) and
 * globally (`/stats/…`, optionally over `teams=`). Every request goes through the same steps in
 * the SPEC §8.2 order — authentication (route middleware, so unknown paths stay 404), team_id
 * form, authorization, parameters — and then the read-through cache around the statistic the
 * database API computes too.
 */

interface Metric extends MetricDeclaration {
  name: string;
  /** Response body key (SPEC §8.3). */
  key: string;
  compute: (store: Store, suppression: Suppression, f: StatFilters, now: number, slaPolicy: SlaPolicy) => Promise<unknown>;
  /** Whether the answer for these filters depends on "now" (shorter cache lifetime). */
  clockDependent: (f: StatFilters) => boolean;
}

const COUNT_PARAMS = ['atDate', 'minDate', 'maxDate', 'minScore', 'maxScore', 'identifiers', 'labels', 'includeSuppressed'] as const;
const noDates = (f: StatFilters) => f.atDate === undefined && f.minDate === undefined && f.maxDateEnd === undefined;

export const METRICS: readonly Metric[] = [
  {
    name: 'open',
    stat: STAT_ENDPOINTS.open,
    path: 'stats/open',
    key: 'open_issues',
    params: COUNT_PARAMS,
    compute: (store, suppression, f, now) => findingCounts(store, suppression, 'OPEN', f, now),
    clockDependent: () => false,
  },
  {
    // Beyond SPEC §8.3 (README: Decisions and deviations): the 90-day chart of the triage page in one request.
    name: 'open_series',
    stat: {
      summary: 'OPEN findings by severity at each of the atDates (one request for a chart; beyond SPEC §8.3)',
      response: openSeriesResponse,
    },
    path: 'stats/open/series',
    key: 'open_issues_series',
    params: ['atDates', 'minScore', 'maxScore', 'identifiers', 'labels', 'includeSuppressed'],
    requireAtDates: true,
    compute: (store, suppression, f) => openSeries(store, suppression, f),
    clockDependent: () => false,
  },
  {
    name: 'fixed',
    stat: STAT_ENDPOINTS.fixed,
    path: 'stats/fixed',
    key: 'fixed_issues',
    params: COUNT_PARAMS,
    compute: (store, suppression, f, now) => findingCounts(store, suppression, 'FIXED', f, now),
    // Rule 2 with only minDate ends the range at now.
    clockDependent: (f) => f.minDate !== undefined && f.maxDateEnd === undefined,
  },
  {
    name: 'mttr',
    stat: STAT_ENDPOINTS.mttr,
    path: 'stats/mttr',
    key: 'mttr',
    params: ['minDate', 'maxDate', 'minScore', 'maxScore', 'labels', 'includeSuppressed'],
    rejectAtDate: true,
    compute: (store, suppression, f, now) => mttrStats(store, suppression, f, now),
    clockDependent: () => false,
  },
  {
    name: 'exposure',
    stat: STAT_ENDPOINTS.exposure,
    path: 'stats/exposure',
    key: 'exposure',
    params: ['atDate', 'minScore', 'maxScore', 'includeSuppressed'],
    compute: (store, suppression, f, now) => totalExposureStats(store, suppression, f, now),
    clockDependent: noDates,
  },
  {
    name: 'current_exposure',
    stat: STAT_ENDPOINTS.currentExposure,
    path: 'stats/exposure/current',
    key: 'current_exposure',
    params: ['atDate', 'minScore', 'maxScore', 'labels', 'includeSuppressed'],
    compute: (store, suppression, f, now) => currentExposureStats(store, suppression, f, now),
    clockDependent: noDates,
  },
  {
    name: 'assets',
    stat: STAT_ENDPOINTS.assets,
    path: 'stats/assets',
    key: 'assets',
    params: ['identifiers', 'labels', 'includeSuppressed'],
    compute: (store, suppression, f, now) => assetStats(store, suppression, f, now),
    clockDependent: () => false,
  },
  {
    name: 'sla',
    stat: STAT_ENDPOINTS.sla,
    path: 'stats/sla',
    key: 'sla',
    params: COUNT_PARAMS,
    compute: (store, suppression, f, now, slaPolicy) => slaStats(store, suppression, f, now, slaPolicy),
    // Open and breached findings are counted at now unless atDate.
    clockDependent: (f) => f.atDate === undefined,
  },
];

export interface MetricRouteDeps {
  store: Store;
  suppression: Suppression;
  now: () => number;
  authenticate: Middleware;
  cache: ResponseCache | undefined;
  /** Remediation deadlines (SPEC §12.1, SLA_DAYS) of /stats/sla. */
  slaPolicy: SlaPolicy;
}

export function metricRoutes(deps: MetricRouteDeps): Router {
  const router = new Router();

  // `teams`: the teams whose targets alone the answer reads (undefined: all targets).
  const answer = async (ctx: Context, metric: Metric, scope: string, filters: StatFilters, teams: readonly string[] | undefined) => {
    const compute = async () => ({ [metric.key]: await metric.compute(deps.store, deps.suppression, filters, deps.now(), deps.slaPolicy) });
    const request = {
      endpoint: metric.name,
      scope,
      params: normalisedParams(filters),
      clockDependent: metric.clockDependent(filters),
      teams,
    };
    await answerCached(ctx, deps.cache, request, compute);
  };

  for (const metric of METRICS) {
    const parse = metricQuery(metric.params, {
      rejectAtDate: metric.rejectAtDate ?? false,
      requireAtDates: metric.requireAtDates ?? false,
    });
    const endpoints = metricEndpoints(metric);

    router.get(routePath(endpoints.team), deps.authenticate, async (ctx) => {
      const team = ctx.params.team_id!;
      if (!isUuid(team)) throw metricsErrors.malformedId();
      authorizeTeam(callerOf(ctx), team);
      const filters = { ...parse(ctx.query), team };
      await answer(ctx, metric, `team:${team}`, filters, [team]);
    });

    router.get(routePath(endpoints.global), deps.authenticate, async (ctx) => {
      const teams = requestedTeams(ctx.query);
      authorizeGlobal(callerOf(ctx), teams);
      const filters = parse(ctx.query, teams);
      if (teams) filters.teams = teams;
      await answer(ctx, metric, teams ? `teams:${teams.join(',')}` : 'global', filters, teams);
    });
  }

  return router;
}
