import type { PageLimits } from '../filters/params.js';
import type { Store } from '../storage/gateway.js';

/** What every database API route needs: the store, page size limits and the clock. */
export interface ApiContext extends PageLimits {
  store: Store;
  /** "now" in epoch seconds (SPEC §0.2); tests fix it. */
  now: () => number;
}
