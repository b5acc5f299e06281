import type { z } from 'zod';
import type { decisionResponse, decisionsResponse } from '../../src/decisions/schema.js';
import type { findingEventListResponse, findingListResponse, findingPeriodsResponse, findingResponse } from '../../src/findings/schema.js';
import type { meResponse } from '../../src/metrics/me.js';
import type { mttrStatsResponse, openSeriesResponse, openStatsResponse, slaStatsResponse } from '../../src/stats/schema.js';

/** The API's bodies, typed by the same zod schemas the OpenAPI document is derived from. */
export type FindingList = z.infer<typeof findingListResponse>;
export type Finding = z.infer<typeof findingResponse>['finding'];
export type FindingEvents = z.infer<typeof findingEventListResponse>;
export type FindingPeriods = z.infer<typeof findingPeriodsResponse>;
export type Decision = z.infer<typeof decisionResponse>['decision'];
export type Decisions = z.infer<typeof decisionsResponse>;
export type OpenStats = z.infer<typeof openStatsResponse>;
export type SlaStats = z.infer<typeof slaStatsResponse>;
export type SeriesStats = z.infer<typeof openSeriesResponse>;
export type MttrStats = z.infer<typeof mttrStatsResponse>;
export type Caller = z.infer<typeof meResponse>['caller'];

/** GET /ui/config.json (src/ui/routes.ts). */
export interface PageConfig {
  /** The database API's origin; "" when it shares this listener. */
  dbApi: string;
  dbApiAuth: boolean;
  oidc: { issuer: string; clientId: string } | null;
}

export const SEVERITIES = ['critical', 'high', 'medium', 'low', 'informational'] as const;
export type Severity = (typeof SEVERITIES)[number];
