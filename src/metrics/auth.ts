import { authenticate as verifyBearer, type Caller } from '../auth/tokens.js';
import { metricsErrors } from '../errors.js';
import type { TokenKeys } from '../auth/keys.js';

/**
 * Authentication and authorization of the metrics API (SPEC §8.1). Tokens are verified by the
 * verifier both APIs share (src/auth/tokens.ts); every failure is a 401 with
 * `WWW-Authenticate: Bearer` and the §8.2 body telling why.
 */

export { callerOf, type Caller } from '../auth/tokens.js';

const { unauthorized, forbidden } = metricsErrors;

/** Verifies the bearer token and puts the caller on `ctx.state.caller`. */
export const authenticate = (keys: TokenKeys) => verifyBearer(keys, unauthorized);

/** Team endpoints: members of the team and admins. */
export function authorizeTeam(caller: Caller, team: string): void {
  if (!caller.admin && !caller.teams.includes(team)) throw forbidden('Not a member of this team');
}

/** Global endpoints: admins; with `teams=`, also callers who belong to every listed team. */
export function authorizeGlobal(caller: Caller, teams: string[] | undefined): void {
  if (caller.admin) return;
  if (teams === undefined) throw forbidden('Global metrics are for administrators only');
  if (!teams.every((t) => caller.teams.includes(t))) throw forbidden('Not a member of every requested team');
}
