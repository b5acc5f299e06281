import type { FieldName } from '../filters/params.js';
import type { Endpoint, EndpointWithParams } from '../http/endpoint.js';

/** Every metrics API path starts with it (SPEC §8.3); the declarations below are relative to it. */
export const METRICS_PREFIX = '/api/v1';

/** What a metric's two endpoints are declared from (src/metrics/routes.ts, METRICS). */
export interface MetricDeclaration {
  /** Under /teams/{team_id}/ and at the root, e.g. stats/open. */
  path: string;
  params: readonly FieldName[];
  rejectAtDate?: boolean;
  /** A series: answers for each of its atDates, which it needs. */
  requireAtDates?: boolean;
  /** The database API's endpoint of the same statistic, whose summary and response it shares (a series: its own). */
  stat: Pick<Endpoint, 'summary' | 'response'>;
}

const IGNORED = 'Parameters not listed are ignored without validation';

/** A metric per team and globally (SPEC §8.3), declared once for the router (routes.ts) and the OpenAPI document. */
export function metricEndpoints(metric: MetricDeclaration): { team: EndpointWithParams; global: EndpointWithParams } {
  const atDate = metric.rejectAtDate
    ? '; atDate is refused (422 Invalid query params)'
    : metric.requireAtDates
      ? '; atDates is required (422 Invalid query params without it)'
      : '';
  const common = { method: 'get' as const, response: metric.stat.response, errors: [401, 403, 422, 503], cached: true };
  return {
    team: {
      ...common,
      path: `/teams/{team_id}/${metric.path}`,
      tag: 'metrics: teams',
      summary: `${metric.stat.summary}, over the targets of the team`,
      description: `Scope: the targets currently associated with team_id (zero values for a team without targets). ${IGNORED}${atDate}.`,
      params: metric.params,
    },
    global: {
      ...common,
      path: `/${metric.path}`,
      tag: 'metrics: global',
      summary: `${metric.stat.summary}, over every finding or the listed teams`,
      description:
        "Scope: every finding in the store (admin only), or with teams the union of the listed teams' targets, each finding counted once. " +
        `${IGNORED}${atDate}.`,
      params: [...metric.params, 'teams'],
    },
  };
}
