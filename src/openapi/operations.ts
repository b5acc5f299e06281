import { CHECK_ENDPOINTS } from '../checks/endpoints.js';
import { DECISION_ENDPOINTS } from '../decisions/endpoints.js';
import { FINDING_ENDPOINTS, ISSUE_FINDING_ENDPOINTS, SOURCE_FINDING_ENDPOINTS, TARGET_FINDING_ENDPOINTS } from '../findings/endpoints.js';
import { HEALTH_ENDPOINTS } from '../health/endpoints.js';
import type { Endpoint } from '../http/endpoint.js';
import { IMPORT_ENDPOINTS } from '../imports/endpoints.js';
import { ISSUE_ENDPOINTS } from '../issues/endpoints.js';
import { METRICS_PREFIX, metricEndpoints } from '../metrics/endpoints.js';
import { ME_ENDPOINT } from '../metrics/me.js';
import { METRICS } from '../metrics/routes.js';
import { WEBHOOK_ENDPOINTS } from '../notifications/endpoints.js';
import { SOURCE_ENDPOINTS } from '../sources/endpoints.js';
import { STAT_ENDPOINTS } from '../stats/endpoints.js';
import { TARGET_ENDPOINTS } from '../targets/endpoints.js';

/**
 * The operations of both APIs, gathered from the endpoint declarations their routers are built
 * from (src/<resource>/endpoints.ts, and src/metrics/routes.ts' METRICS for the metrics). The
 * metrics API's are declared under its prefix, added here. test/openapi.test.ts checks that these
 * and the mounted routes of both apps are the same set, each with the parameters its route accepts.
 */

export const dbOperations: Endpoint[] = [
  ...Object.values(FINDING_ENDPOINTS),
  ...Object.values(SOURCE_ENDPOINTS),
  ...Object.values(SOURCE_FINDING_ENDPOINTS),
  ...Object.values(ISSUE_ENDPOINTS),
  ...Object.values(ISSUE_FINDING_ENDPOINTS),
  ...Object.values(TARGET_ENDPOINTS),
  ...Object.values(TARGET_FINDING_ENDPOINTS),
  ...Object.values(STAT_ENDPOINTS),
  ...Object.values(CHECK_ENDPOINTS),
  ...Object.values(IMPORT_ENDPOINTS),
  HEALTH_ENDPOINTS.database,
];

const prefixed = (endpoint: Endpoint): Endpoint => ({ ...endpoint, path: `${METRICS_PREFIX}${endpoint.path}` });

export const metricsOperations: Endpoint[] = [
  ...METRICS.flatMap((metric) => Object.values(metricEndpoints(metric))),
  HEALTH_ENDPOINTS.metrics,
  ...Object.values(WEBHOOK_ENDPOINTS),
  ...Object.values(DECISION_ENDPOINTS),
  ME_ENDPOINT,
].map(prefixed);
