import type { KeyObject } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import koaJwt from 'koa-jwt';
import { z } from 'zod';
import { safeText } from '../domain/text.js';
import type { ApiError } from '../errors.js';
import type { TokenKeys } from '../metrics/keys.js';

/**
 * Bearer token verification (SPEC §8.1), shared by the metrics API and, with DB_API_AUTH=jwt, the
 * database API (§5.1). koa-jwt verifies the token — signature with the key of the token's
 * algorithm (HS256 → JWT_SECRET, RS256 → JWT_PUBLIC_KEY, nothing else), exp/nbf with 60 s leeway,
 * iss/aud when configured — and the claims are then checked here. Every failure is the API's own
 * 401 (each API renders it in its body shape, with `WWW-Authenticate: Bearer`); koa-jwt's texts
 * never reach the client.
 */

export interface Caller {
  sub: string;
  teams: string[];
  admin: boolean;
  /** Rights beyond reading, e.g. `ingest` (database API writes, SPEC §5.1). */
  scopes: string[];
}

const claims = z.object({
  // Recorded with decisions (`by`) and compared with team ids: any text, made well formed (SPEC §5.6).
  sub: safeText().min(1),
  teams: z.array(safeText()).optional().default([]),
  admin: z.boolean().optional().default(false),
  scopes: z.array(safeText()).optional().default([]),
});

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
  const byAlgorithm = new Map<string, KeyObject>();
  if (keys.secret) byAlgorithm.set('HS256', keys.secret);
  if (keys.publicKey) byAlgorithm.set('RS256', keys.publicKey);
  if (byAlgorithm.size === 0) throw new Error('no token key configured');

  const options: koaJwt.Options & { clockTolerance: number } = {
    // The key is chosen by the token's algorithm; jsonwebtoken also refuses a key of the wrong kind.
    secret: (async (header: { alg?: unknown }) => {
      const key = typeof header.alg === 'string' ? byAlgorithm.get(header.alg) : undefined;
      if (!key) throw new Error('unexpected algorithm');
      return key;
    }) as unknown as koaJwt.SecretLoader,
    algorithms: [...byAlgorithm.keys()],
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
    const parsed = claims.safeParse(ctx.state.jwt);
    if (!parsed.success) throw unauthorized('Invalid token claims');
    ctx.state.caller = parsed.data satisfies Caller;
    await next();
  };
}

export const callerOf = (ctx: Context): Caller => ctx.state.caller as Caller;
