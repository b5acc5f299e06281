import type { KeyObject } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import koaJwt from 'koa-jwt';
import { z } from 'zod';
import { safeText } from '../domain/text.js';
import type { ApiError } from '../errors.js';
import { acceptedAlgorithms, type ClaimNames, DEFAULT_CLAIMS, type TokenKeys } from './keys.js';

/**
 * Bearer token verification (SPEC §8.1), shared by the metrics API and, with DB_API_AUTH=jwt, the
 * database API (§5.1). koa-jwt verifies the token — signature with the key of the token's
 * algorithm (HS256 → JWT_SECRET; RS256 and ES256 with a `kid` → that key of the JWT_JWKS_URL set;
 * RS256 otherwise → JWT_PUBLIC_KEY; nothing else), exp/nbf with 60 s leeway, iss/aud when
 * configured — and the claims, under the names JWT_TEAMS_CLAIM and JWT_ADMIN_CLAIM give them, are
 * then checked here. Every failure is the API's own 401 (each API renders it in its body shape,
 * with `WWW-Authenticate: Bearer`); koa-jwt's texts never reach the client.
 */

export interface Caller {
  sub: string;
  teams: string[];
  admin: boolean;
  /** Rights beyond reading, e.g. `ingest` (database API writes, SPEC §5.1). */
  scopes: string[];
}

// Recorded with decisions (`by`) and compared with team ids: any text, made well formed (SPEC §5.6).
const subject = safeText().min(1);
const stringList = z.array(safeText()).optional();
// A provider's list claim (`roles`, `groups`) holds the admin value; vulndb's own `admin` is a boolean.
const adminClaim = z.union([z.boolean(), z.array(safeText())]).optional();

/** The caller a verified token names, or undefined when a claim it relies on has the wrong type. */
export function callerFromClaims(payload: Record<string, unknown>, names: ClaimNames = DEFAULT_CLAIMS): Caller | undefined {
  // Own properties only: a claim name such as `constructor` must not reach Object.prototype.
  const claim = (name: string) => (Object.hasOwn(payload, name) ? payload[name] : undefined);
  const sub = subject.safeParse(claim('sub'));
  const teams = stringList.safeParse(claim(names.teams));
  const admin = adminClaim.safeParse(claim(names.admin));
  const scopes = stringList.safeParse(claim('scopes'));
  if (!sub.success || !teams.success || !admin.success || !scopes.success) return undefined;
  return {
    sub: sub.data,
    teams: teams.data ?? [],
    admin: Array.isArray(admin.data) ? admin.data.includes(names.adminValue) : (admin.data ?? false),
    scopes: scopes.data ?? [],
  };
}

export const CLOCK_TOLERANCE_SECONDS = 60;

/** Why a token was refused; the metrics API tells it, the database API answers "Unauthorized". */
function reason(err: unknown): string {
  const name = err instanceof Error ? err.name : '';
  if (name === 'TokenExpiredError') return 'Token expired';
  if (name === 'NotBeforeError') return 'Token not yet valid';
  return 'Invalid token';
}

/** Verifies the bearer token and puts the caller on `ctx.state.caller`; `unauthorized` makes the 401. */
export function authenticate(keys: TokenKeys, unauthorized: (reason: string) => ApiError): Middleware {
  const algorithms = acceptedAlgorithms(keys);
  if (algorithms.length === 0) throw new Error('no token key configured');
  const names = keys.claims ?? DEFAULT_CLAIMS;

  const options: koaJwt.Options & { clockTolerance: number } = {
    secret: ((header: { alg?: unknown; kid?: unknown }) => verificationKey(keys, header)) as unknown as koaJwt.SecretLoader,
    algorithms,
    clockTolerance: CLOCK_TOLERANCE_SECONDS,
    passthrough: true, // failures are rendered below, in the API's shape
    key: 'jwt',
    ...(keys.issuer !== undefined ? { issuer: keys.issuer } : {}),
    ...(keys.audience !== undefined ? { audience: keys.audience } : {}),
  };
  const verify = koaJwt(options);
  const done = async () => {};

  return async (ctx, next) => {
    await verify(ctx, done);
    if (!ctx.get('Authorization')) throw unauthorized('Missing bearer token');
    if (ctx.state.jwtOriginalError !== undefined || ctx.state.jwt === undefined) throw unauthorized(reason(ctx.state.jwtOriginalError));
    const caller = callerFromClaims(ctx.state.jwt as Record<string, unknown>, names);
    if (caller === undefined) throw unauthorized('Invalid token claims');
    ctx.state.caller = caller;
    await next();
  };
}

/**
 * The key of a token, chosen by its algorithm (and `kid`) and never by anything else the token
 * says: an HS256 token is checked with JWT_SECRET only, so a public key can never serve as an HMAC
 * secret; jsonwebtoken also refuses a key of the wrong kind for the algorithm.
 */
async function verificationKey(keys: TokenKeys, header: { alg?: unknown; kid?: unknown }): Promise<KeyObject> {
  const { alg, kid } = header;
  if (alg === 'HS256' && keys.secret) return keys.secret;
  if ((alg === 'RS256' || alg === 'ES256') && typeof kid === 'string' && keys.jwks) {
    const key = await keys.jwks.keyFor(kid, alg);
    if (key) return key;
  }
  if (alg === 'RS256' && keys.publicKey) return keys.publicKey;
  throw new Error('no key for the token');
}

export const callerOf = (ctx: Context): Caller => ctx.state.caller as Caller;
