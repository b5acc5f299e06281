import { createSecretKey } from 'node:crypto';
import { signJwt } from '../../src/metrics/sign.js';
import { fetchCached } from './service.js';

/** What the metrics API tests share: a signing secret, tokens, the severity object, a request. */

export const METRICS_SECRET = 'metrics-test-secret-0123456789abcdef-0123456789';
const key = createSecretKey(Buffer.from(METRICS_SECRET));
const nowS = () => Math.floor(Date.now() / 1000);

/** A token signed with METRICS_SECRET (start services with env JWT_SECRET: METRICS_SECRET), valid for an hour. */
export const metricsToken = (claims: Record<string, unknown>) =>
  signJwt({ sub: 'tester', iat: nowS(), exp: nowS() + 3600, ...claims }, key);

export const ADMIN_TOKEN = metricsToken({ admin: true });

type Severity = 'critical' | 'high' | 'medium' | 'low' | 'informational';
export const bySeverity = (v: Partial<Record<Severity, number>> = {}) => ({
  critical: 0,
  high: 0,
  medium: 0,
  low: 0,
  informational: 0,
  ...v,
});

export function fetchMetric(baseUrl: string, path: string, bearer = ADMIN_TOKEN) {
  return fetchCached(`${baseUrl}/api/v1/${path}`, { headers: { Authorization: `Bearer ${bearer}` } });
}

/** PUT /api/v1/findings/{id}/decision (SPEC §12.3) on the metrics API at `baseUrl`. */
export function putDecision(baseUrl: string, finding: string, body: unknown, bearer = ADMIN_TOKEN) {
  return fetch(`${baseUrl}/api/v1/findings/${finding}/decision`, {
    method: 'PUT',
    headers: { Authorization: `Bearer ${bearer}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
}
