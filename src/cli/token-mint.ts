import type { Config } from '../config.js';
import { nowSeconds } from '../domain/time.js';
import { tokenKeys } from '../metrics/keys.js';
import { signJwt, tokenClaims, type TokenRequest } from '../metrics/sign.js';
import { CliError } from './exit.js';

/** The signed token of a request, with the server's issuer/audience when it checks them. */
export function mintToken(config: Pick<Config, 'jwt' | 'dataDir'>, req: TokenRequest, now = nowSeconds()): string {
  const keys = tokenKeys(config.jwt, config.dataDir);
  if (!keys.secret) {
    throw new CliError('only JWT_PUBLIC_KEY is configured: sign RS256 tokens with the matching private key, or set JWT_SECRET');
  }
  return signJwt(tokenClaims(req, now, keys), keys.secret, 'HS256');
}
