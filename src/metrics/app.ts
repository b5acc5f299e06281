import Koa from 'koa';
import { nowSeconds } from '../domain/time.js';
import { type ErrorRenderer, metricsErrors } from '../errors.js';
import { errorMiddleware } from '../http/error-middleware.js';
import { ignoreTrailingSlash, mountRoutes } from '../http/middleware.js';
import { useLinearQuery } from '../http/query.js';
import type { Locks } from '../locks/target-locks.js';
import type { Logger } from '../log.js';
import type { Store } from '../storage/gateway.js';
import { authenticate } from './auth.js';
import { ResponseCache, type CacheSettings } from '../cache/response-cache.js';
import type { TokenKeys } from '../auth/keys.js';
import { METRICS_PREFIX } from './endpoints.js';
import { metricRoutes } from './routes.js';
import { DEFAULT_SLA_POLICY, type SlaPolicy, slaVariant } from '../sla/policy.js';
import { observeRequests } from '../observability/requests.js';
import { webhookRoutes } from '../notifications/routes.js';
import { type Resolver, systemResolver } from '../notifications/url-policy.js';
import type { WebhookLimits } from '../config.js';
import { decisionRoutes, type DecisionRouteDeps } from '../decisions/routes.js';
import type { Suppression } from '../decisions/suppression.js';
import type { ServiceMetrics } from '../observability/metrics.js';
import { meRoutes } from './me.js';
import { HEALTH_ENDPOINTS } from '../health/endpoints.js';
import { healthRoutes } from '../health/routes.js';
import { uiRoutes, type UiSettings } from '../ui/routes.js';

/** The security metrics API (SPEC §8) under /api/v1: builds the Koa app; never listens. */

const typeOf: Record<number, string> = {
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Record not found',
  405: 'Method Not Allowed',
  422: 'Validation',
  500: 'Internal',
  503: 'Unavailable',
};

/** SPEC §8.2 body: `{"code", "error", "type"}`. */
export const metricsBody: ErrorRenderer = (err) => ({
  code: err.status,
  error: err.message,
  type: err.type ?? typeOf[err.status] ?? 'Error',
});

export interface MetricsApiDeps {
  store: Store;
  /** Findings suppressed by triage decisions (SPEC §12.3): the service's one, shared with the database API. */
  suppression: Suppression;
  log: Logger;
  /** Token verification keys (src/auth/keys.ts). */
  keys: TokenKeys;
  /** Redis read-through cache of responses; without it every answer is computed. */
  cache?: CacheSettings | undefined;
  /** "now" in epoch seconds for the statistics; tests fix it. Tokens are checked on the real clock. */
  now?: () => number;
  /** After a triage decision is made or revoked (SPEC §12.3): refresh cached answers, notify. */
  onDecision?: DecisionRouteDeps['onChange'];
  /** Per-finding locks of decision writes, shared by every API process (SPEC §12.3); none: this process's own. */
  decisionLocks?: Locks | undefined;
  /** Remediation deadlines (SPEC §12.1, SLA_DAYS) of /stats/sla; none: the default policy. */
  slaPolicy?: SlaPolicy | undefined;
  /** WEBHOOK_ALLOW_PRIVATE and MAX_WEBHOOKS (SPEC §9.1); none: public addresses only, 100. */
  webhooks?: WebhookLimits | undefined;
  /** How subscriptions' host names resolve; tests inject one. */
  resolve?: Resolver | undefined;
  /** The triage page at /ui/ (SPEC §15); none: not served. */
  ui?: UiSettings | undefined;
  /** The process's Prometheus collectors (src/service.ts); none: nothing counted (tests, tools). */
  metrics?: ServiceMetrics | undefined;
}

export function createMetricsApi(deps: MetricsApiDeps): Koa {
  const app = new Koa();
  app.use(observeRequests(deps.log, 'metrics', deps.metrics));
  app.use(errorMiddleware(metricsBody, deps.log));
  app.use(ignoreTrailingSlash);
  // Too many parameters is refused at the query validation step (SPEC §8.2 order; schema.ts).
  useLinearQuery(app);
  const health = healthRoutes({ store: deps.store, endpoint: HEALTH_ENDPOINTS.metrics, unavailable: metricsErrors.unavailable });
  const verified = authenticate(deps.keys);
  const metrics = metricRoutes({
    store: deps.store,
    suppression: deps.suppression,
    now: deps.now ?? nowSeconds,
    authenticate: verified,
    cache: deps.cache
      ? new ResponseCache('metrics', { ...deps.cache, variant: slaVariant(deps.slaPolicy), metrics: deps.metrics }, deps.log)
      : undefined,
    slaPolicy: deps.slaPolicy ?? DEFAULT_SLA_POLICY,
  });
  const webhooks = webhookRoutes({
    store: deps.store,
    authenticate: verified,
    destinations: { allowPrivate: deps.webhooks?.allowPrivate ?? false, resolve: deps.resolve ?? systemResolver },
    maxSubscriptions: deps.webhooks?.maxSubscriptions ?? 100,
  });
  const decisions = decisionRoutes({
    store: deps.store,
    nowMs: deps.now ? () => deps.now!() * 1000 : Date.now,
    authenticate: verified,
    // Statements leave suppressed findings out from the first decision on.
    onChange: async (finding, decision, action) => {
      deps.suppression.decided();
      await deps.onDecision?.(finding, decision, action);
    },
    locks: deps.decisionLocks,
  });
  if (deps.ui) app.use(uiRoutes(deps.ui).routes());
  mountRoutes(app, [health, metrics, webhooks, decisions, meRoutes(verified)], metricsErrors, METRICS_PREFIX);
  return app;
}
