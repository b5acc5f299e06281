import type { Queue } from 'bullmq';
import Koa from 'koa';
import { dbApiAccess } from './auth/db-api.js';
import { ResponseCache, type CacheSettings } from './cache/response-cache.js';
import { checkRoutes } from './checks/routes.js';
import { importRoutes } from './imports/routes.js';
import { nowSeconds } from './domain/time.js';
import { parentFindingRoutes } from './findings/parent-routes.js';
import { findingRoutes } from './findings/routes.js';
import type { ApiContext } from './api-context.js';
import { issueRoutes } from './issues/routes.js';
import { docsRoutes } from './openapi/routes.js';
import { sourceRoutes } from './sources/routes.js';
import { dbApiBody, dbErrors } from './errors.js';
import { errorMiddleware } from './http/error-middleware.js';
import { HEALTH_ENDPOINTS } from './health/endpoints.js';
import { healthRoutes } from './health/routes.js';
import { allowSameHostOrigins } from './http/cors.js';
import { ignoreTrailingSlash, limitQueryParams, mountRoutes } from './http/middleware.js';
import { useLinearQuery } from './http/query.js';
import type { Logger } from './log.js';
import type { TokenKeys } from './auth/keys.js';
import { statsRoutes } from './stats/routes.js';
import { DEFAULT_SLA_POLICY, type SlaPolicy, slaVariant } from './sla/policy.js';
import type { Store } from './storage/gateway.js';
import type { Locks } from './locks/target-locks.js';
import { targetRoutes } from './targets/routes.js';
import type { TotalsRewriter } from './ingest/totals.js';
import { observeRequests } from './observability/requests.js';
import type { Suppression } from './decisions/suppression.js';
import type { ServiceMetrics } from './observability/metrics.js';

/** The database API (SPEC §5–§6): builds the Koa app from its dependencies; never listens. */

export interface DbApiDeps {
  store: Store;
  /** Findings suppressed by triage decisions (SPEC §12.3): the service's one, shared with the metrics API. */
  suppression: Suppression;
  queue: Queue;
  log: Logger;
  maxReportBytes: number;
  pageSizeDefault: number;
  pageSizeMax: number;
  /** "now" in epoch seconds; tests fix it. */
  now?: () => number;
  /** The ingest worker's per-target locks: POST /targets takes its target's (see associateTeams). */
  locks: Locks;
  /** The process's one rewriter of the findings lists' totals (POST /targets moves them). */
  totals: TotalsRewriter;
  /** Called after POST /targets changed team associations (cache invalidation). */
  onTeamsChanged?: () => Promise<void>;
  /** Redis read-through cache of findings lists (keyed by the data version); none: always computed. */
  cache?: CacheSettings | undefined;
  /** DB_API_AUTH=jwt: bearer tokens verified with these keys (SPEC §5.1, src/auth/db-api.ts); none: open. */
  auth?: TokenKeys | undefined;
  /** Remediation deadlines (SPEC §12.1, SLA_DAYS); none: the default policy. */
  slaPolicy?: SlaPolicy | undefined;
  /** The process's Prometheus collectors (src/service.ts); none: nothing counted (tests, tools). */
  metrics?: ServiceMetrics | undefined;
}

export function createDbApi(deps: DbApiDeps): Koa {
  const app = new Koa();
  app.use(observeRequests(deps.log, 'database', deps.metrics));
  app.use(errorMiddleware(dbApiBody, deps.log));
  app.use(ignoreTrailingSlash);
  useLinearQuery(app);
  // SPEC §5.6 before everything else, authentication and routing included: a limit on the request
  // itself (like a body's 413), not a parameter error of §5.2's order.
  app.use(limitQueryParams(dbErrors.tooManyParams));
  app.use(allowSameHostOrigins);
  app.use(dbApiAccess(deps.auth));
  const api: ApiContext = {
    store: deps.store,
    suppression: deps.suppression,
    pageSizeDefault: deps.pageSizeDefault,
    pageSizeMax: deps.pageSizeMax,
    now: deps.now ?? nowSeconds,
    cache: deps.cache
      ? new ResponseCache('db', { ...deps.cache, variant: slaVariant(deps.slaPolicy), metrics: deps.metrics }, deps.log)
      : undefined,
    slaPolicy: deps.slaPolicy ?? DEFAULT_SLA_POLICY,
  };
  const routers = [
    checkRoutes({ queue: deps.queue, maxReportBytes: deps.maxReportBytes, log: deps.log, metrics: deps.metrics }),
    importRoutes({ queue: deps.queue, maxReportBytes: deps.maxReportBytes, log: deps.log, now: api.now, metrics: deps.metrics }),
    findingRoutes(api),
    sourceRoutes(api),
    issueRoutes(api),
    parentFindingRoutes(api),
    targetRoutes({
      ...api,
      maxBodyBytes: deps.maxReportBytes,
      locks: deps.locks,
      log: deps.log,
      totals: deps.totals,
      ...(deps.onTeamsChanged ? { onTeamsChanged: deps.onTeamsChanged } : {}),
    }),
    statsRoutes(api),
    healthRoutes({ store: deps.store, endpoint: HEALTH_ENDPOINTS.database, unavailable: dbErrors.unavailable }),
    docsRoutes(api),
  ];
  mountRoutes(app, routers, dbErrors);
  return app;
}
