import { createHmac, sign, type KeyObject } from 'node:crypto';

/**
 * Compact JWS signing (RFC 7515) for the tokens operators mint with `vulndb token`: HS256 with a
 * secret key, RS256 with an RSA private key; ES256 with a P-256 private key and a `kid` header as
 * an identity provider signs them (the tests' provider). Verification is koa-jwt's job
 * (src/auth/tokens.ts); this module only writes tokens.
 */

export type SigningAlgorithm = 'HS256' | 'RS256' | 'ES256';

const b64url = (data: string | Buffer) => Buffer.from(data).toString('base64url');

export function signJwt(payload: Record<string, unknown>, key: KeyObject, alg: SigningAlgorithm = 'HS256', kid?: string): string {
  const header = { alg, typ: 'JWT', ...(kid !== undefined ? { kid } : {}) };
  const input = `${b64url(JSON.stringify(header))}.${b64url(JSON.stringify(payload))}`;
  return `${input}.${b64url(signature(input, key, alg))}`;
}

function signature(input: string, key: KeyObject, alg: SigningAlgorithm): Buffer {
  if (alg === 'HS256') return createHmac('sha256', key).update(input).digest();
  // JWS carries an ECDSA signature as r||s (RFC 7518 §3.4), not DER.
  if (alg === 'ES256') return sign('sha256', Buffer.from(input), { key, dsaEncoding: 'ieee-p1363' });
  return sign('sha256', Buffer.from(input), key);
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
