import http from 'node:http';
import type { Queue } from 'bullmq';
import type Koa from 'koa';
import type { Config } from '../config.js';
import type { Logger } from '../log.js';
import { createDbApi } from '../app.js';
import { openDbApiWarning } from '../auth/db-api.js';
import { JwksKeySet } from '../auth/jwks.js';
import { startDecisionEffects, type DecisionEffects } from './decision-effects.js';
import { nowSeconds } from '../domain/time.js';
import { answerClientErrors } from '../http/client-errors.js';
import { closeServer, listen } from '../http/servers.js';
import { createMetricsApi } from '../metrics/app.js';
import { describeKeys, type TokenKeys, tokenKeys } from '../auth/keys.js';
import { findingLocks } from '../locks/target-locks.js';
import type { RoleContext, Stoppable } from './context.js';
import type { StopDeadline } from './stop-deadline.js';

/**
 * Stops taking requests at once (closeServer, before any await), answers those in flight while
 * time is left (then cuts their connections), then stops the decisions' effects.
 */
const stopping = (servers: http.Server[], decisions: DecisionEffects) => async (deadline: StopDeadline) => {
  const answered = Promise.all(servers.map(closeServer));
  if (!(await deadline.bound('answering the requests in flight', answered))) for (const s of servers) s.closeAllConnections();
  await deadline.bound("closing the decisions' effects", decisions.close());
};

/** On one port, the metrics API answers its own paths and the triage page (SPEC §15). */
const isMetricsPath = (url: string | undefined) => url !== undefined && (url.startsWith('/api/v1') || /^\/ui(?:[/?]|$)/.test(url));

/** The tokens' keys (SPEC §8.1), said in the log, with how the database API is guarded (SPEC §5.1). */
async function verificationKeys(s: RoleContext, metricsLog: Logger): Promise<TokenKeys> {
  const { config, log } = s;
  // The provider's key set is fetched at start; the service starts without it if the provider is
  // unreachable (its tokens are refused until a later fetch succeeds).
  const jwks = config.jwt.jwksUrl !== undefined ? new JwksKeySet({ url: config.jwt.jwksUrl, log: metricsLog }) : undefined;
  await jwks?.refresh();
  const tokens = tokenKeys(config.jwt, config.dataDir, jwks);
  describeKeys(tokens, config.dataDir, metricsLog);
  const openWarning = openDbApiWarning(config);
  if (openWarning) log.warn(openWarning);
  else if (config.dbApiAuth === 'jwt') log.info('database API: bearer tokens required (DB_API_AUTH=jwt)');
  return tokens;
}

/** Both apps on their ports, or on one port when they are the same (SPEC §10); `dbApiPortIs` hears the database API's. */
async function listenApis(config: Config, dbApi: Koa, metricsApi: Koa, decisions: DecisionEffects, dbApiPortIs: (port: number) => void) {
  if (config.dbApiPort === config.metricsApiPort && config.dbApiPort !== 0) {
    // One port serves both route sets (SPEC §10).
    const db = dbApi.callback();
    const metrics = metricsApi.callback();
    const server = http.createServer((req, res) => (isMetricsPath(req.url) ? metrics(req, res) : db(req, res)));
    answerClientErrors(server, 'database');
    const url = await listen(server, config.dbApiPort, config.host);
    return { dbApiUrl: url, metricsApiUrl: url, stop: stopping([server], decisions) };
  }
  const dbServer = http.createServer(dbApi.callback());
  const metricsServer = http.createServer(metricsApi.callback());
  answerClientErrors(dbServer, 'database');
  answerClientErrors(metricsServer, 'metrics');
  const dbApiUrl = await listen(dbServer, config.dbApiPort, config.host);
  dbApiPortIs(Number(new URL(dbApiUrl).port));
  const metricsApiUrl = await listen(metricsServer, config.metricsApiPort, config.host);
  return { dbApiUrl, metricsApiUrl, stop: stopping([dbServer, metricsServer], decisions) };
}

/** The API role: both Koa apps, on one port or two (SPEC §10). */
export async function startApiRole(s: RoleContext, queue: Queue): Promise<Stoppable & { dbApiUrl: string; metricsApiUrl: string }> {
  const { config, opts, log, store, redis, names } = s;
  const metricsLog = log.child({ api: 'metrics' });
  const tokens = await verificationKeys(s, metricsLog);
  const dbApi = createDbApi({
    store,
    suppression: s.suppression,
    queue,
    log: log.child({ api: 'database' }),
    maxReportBytes: config.maxReportBytes,
    pageSizeDefault: config.pageSizeDefault,
    pageSizeMax: config.pageSizeMax,
    locks: s.locks,
    totals: s.totals,
    cache: { redis, names },
    ...(opts.now ? { now: opts.now } : {}),
    // Team re-association changes every team-scoped answer: cached ones become stale.
    onTeamsChanged: () => s.dataVersion.bump('teams associated'),
    // SPEC §5.1: the metrics API's tokens, when DB_API_AUTH=jwt.
    auth: config.dbApiAuth === 'jwt' ? tokens : undefined,
    slaPolicy: config.slaPolicy,
    metrics: s.metrics,
  });
  // Decisions change statistics and lists: cached answers are refreshed, events emitted (SPEC §12.3).
  const decisions = startDecisionEffects({
    store,
    suppression: s.suppression,
    redis,
    names,
    dataVersion: s.dataVersion,
    now: opts.now ?? nowSeconds,
    log: metricsLog,
  });
  // The page learns the database API's port once it listens (0 in tests: any free port).
  let dbApiPort: number | undefined;
  const metricsApi = createMetricsApi({
    store,
    suppression: s.suppression,
    log: metricsLog,
    keys: tokens,
    cache: { redis, names },
    ...(opts.now ? { now: opts.now } : {}),
    onDecision: decisions.onChange,
    decisionLocks: findingLocks(redis, names),
    slaPolicy: config.slaPolicy,
    webhooks: config.webhooks,
    resolve: opts.notifications?.resolve,
    ui: { dbApiPort: () => dbApiPort, dbApiAuth: config.dbApiAuth === 'jwt', oidc: config.oidc },
    metrics: s.metrics,
  });
  return listenApis(config, dbApi, metricsApi, decisions, (port) => {
    dbApiPort = port;
  });
}
