import type { KeyObject } from 'node:crypto';
import type { Context, Middleware } from 'koa';
import koaJwt from 'koa-jwt';
import { z } from 'zod';
import { metricsErrors } from './errors.js';
import type { TokenKeys } from './keys.js';

/**
 * Authentication and authorization of the metrics API (SPEC §8.1). koa-jwt verifies the bearer
 * token — signature with the key of the token's algorithm (HS256 → JWT_SECRET, RS256 →
 * JWT_PUBLIC_KEY, nothing else), exp/nbf with 60 s leeway, iss/aud when configured — and the
 * claims are then checked here. Every failure is a 401 with `WWW-Authenticate: Bearer` and the
 * §8.2 body; koa-jwt's own texts never reach the client.
 */

export interface Caller {
  sub: string;
  teams: string[];
  admin: boolean;
}

const claims = z.object({
  sub: z.string().min(1),
  teams: z.array(z.string()).optional().default([]),
  admin: z.boolean().optional().default(false),
});

export const CLOCK_TOLERANCE_SECONDS = 60;

const { unauthorized, forbidden } = metricsErrors;

function reason(err: unknown): string {
  const name = err instanceof Error ? err.name : '';
  if (name === 'TokenExpiredError') return 'Token expired';
  if (name === 'NotBeforeError') return 'Token not yet valid';
  return 'Invalid token';
}

/** Verifies the bearer token and puts the caller on `ctx.state.caller`. */
export function authenticate(keys: TokenKeys): Middleware {
  const byAlgorithm = new Map<string, KeyObject>();
  if (keys.secret) byAlgorithm.set('HS256', keys.secret);
  if (keys.publicKey) byAlgorithm.set('RS256', keys.publicKey);
  if (byAlgorithm.size === 0) throw new Error('metrics API: no token key configured');

  const options: koaJwt.Options & { clockTolerance: number } = {
    // The key is chosen by the token's algorithm; jsonwebtoken also refuses a key of the wrong kind.
    secret: (async (header: { alg?: unknown }) => {
      const key = typeof header.alg === 'string' ? byAlgorithm.get(header.alg) : undefined;
      if (!key) throw new Error('unexpected algorithm');
      return key;
    }) as unknown as koaJwt.SecretLoader,
    algorithms: [...byAlgorithm.keys()],
    clockTolerance: CLOCK_TOLERANCE_SECONDS,
    passthrough: true, // failures are rendered below, in the SPEC §8.2 shape
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
