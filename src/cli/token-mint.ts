import type { Config } from '../config.js';
import { nowSeconds } from '../domain/time.js';
import { tokenKeys } from '../auth/keys.js';
import { signJwt, tokenClaims, type TokenRequest } from '../metrics/sign.js';
import { CliError } from './exit.js';

/** The signed token of a request, with the server's issuer/audience when it checks them. */
export function mintToken(config: Pick<Config, 'jwt' | 'dataDir'>, req: TokenRequest, now = nowSeconds()): string {
  const keys = tokenKeys(config.jwt, config.dataDir);
  if (!keys.secret) {
    throw new CliError(
      'JWT_SECRET is unset while JWT_PUBLIC_KEY or JWT_JWKS_URL is configured: tokens come from the matching private key or the identity provider; set JWT_SECRET to mint them here',
    );
  }
  return signJwt(tokenClaims(req, now, keys), keys.secret, 'HS256');
}
