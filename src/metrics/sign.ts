import { createHmac, sign, type KeyObject } from 'node:crypto';

/**
 * Compact JWS signing (RFC 7515) for the tokens operators mint with `vulndb token`: HS256 with a
 * secret key, RS256 with an RSA private key. Verification is koa-jwt's job (src/metrics/auth.ts);
 * this module only writes tokens.
 */

export type SigningAlgorithm = 'HS256' | 'RS256';

const b64url = (data: string | Buffer) => Buffer.from(data).toString('base64url');

export function signJwt(payload: Record<string, unknown>, key: KeyObject, alg: SigningAlgorithm = 'HS256'): string {
  const input = `${b64url(JSON.stringify({ alg, typ: 'JWT' }))}.${b64url(JSON.stringify(payload))}`;
  const signature = alg === 'HS256' ? createHmac('sha256', key).update(input).digest() : sign('sha256', Buffer.from(input), key);
  return `${input}.${b64url(signature)}`;
}

export interface TokenRequest {
  sub: string;
  teams: string[];
  admin: boolean;
  /** Rights beyond reading, e.g. `ingest` for database API writes (SPEC §5.1); none when absent. */
  scopes?: string[];
  /** Lifetime in seconds. */
  ttl: number;
}

/** The claims of SPEC §8.1 (and §5.1's scopes) plus iat/exp (and iss/aud when the server checks them). */
export function tokenClaims(req: TokenRequest, now: number, check: { issuer?: string | undefined; audience?: string | undefined } = {}) {
  return {
    sub: req.sub,
    teams: req.teams,
    admin: req.admin,
    ...(req.scopes !== undefined && req.scopes.length > 0 ? { scopes: req.scopes } : {}),
    iat: now,
    exp: now + req.ttl,
    ...(check.issuer !== undefined ? { iss: check.issuer } : {}),
    ...(check.audience !== undefined ? { aud: check.audience } : {}),
  };
}
