import type { ResponseCache } from './cache/response-cache.js';
import type { Suppression } from './decisions/suppression.js';
import type { PageLimits } from './filters/params.js';
import type { Store } from './storage/gateway.js';
import type { SlaPolicy } from './sla/policy.js';

/**
 * What every database API route needs: the store, page size limits, the clock, the response cache.
 * Built by src/app.ts from types their folders own; it sits beside app.ts rather than in src/http,
 * which the decisions' routes import: naming the Suppression there made http and decisions a knot.
 */
export interface ApiContext extends PageLimits {
  store: Store;
  /** Findings suppressed by triage decisions (SPEC §12.3), one for the service. */
  suppression: Suppression;
  /** "now" in epoch seconds (SPEC §0.2); tests fix it. */
  now: () => number;
  /** Redis cache of findings lists; without it every answer is computed. */
  cache?: ResponseCache | undefined;
  /** Remediation deadlines (SPEC §12.1, SLA_DAYS): `sla_due`, `sla=` and /stats/sla. */
  slaPolicy: SlaPolicy;
}
