import { createPublicKey, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Config } from '../config.js';
import type { JwksKeySet } from './jwks.js';
import type { Logger } from '../log.js';

/**
 * Key material of the metrics API tokens (SPEC §8.1, §10): HS256 with JWT_SECRET, RS256 with
 * JWT_PUBLIC_KEY, RS256/ES256 with the JWT_JWKS_URL key set (src/auth/jwks.ts), and the claim names
 * of the tokens. When no key is configured (a fresh `npm start`) a random secret is generated
 * once into `<DATA_DIR>/jwt-secret` (mode 0600) and shared by the server and `vulndb token`, so
 * the API is usable at once without being open.
 */

export type JwtConfig = Config['jwt'];

export interface TokenKeys {
  /** HS256 verification and signing key. */
  secret: KeyObject | undefined;
  /** RS256 verification key. */
  publicKey: KeyObject | undefined;
  issuer: string | undefined;
  audience: string | undefined;
  /** RS256/ES256 verification keys by kid (JWT_JWKS_URL). */
  jwks?: JwksKeySet | undefined;
  /** Claim names of the caller's teams and admin right (SPEC §8.1); absent: `teams`, `admin`. */
  claims?: ClaimNames | undefined;
  /** Where the HS256 secret came from (logged at start). */
  secretSource: 'JWT_SECRET' | 'generated' | 'data-dir' | undefined;
}

export interface ClaimNames {
  teams: string;
  admin: string;
  /** The value that makes a string-array admin claim (e.g. `roles`) an admin. */
  adminValue: string;
}

export const DEFAULT_CLAIMS: ClaimNames = { teams: 'teams', admin: 'admin', adminValue: 'vulndb-admin' };

export const SECRET_FILE = 'jwt-secret';
const MIN_SECRET_CHARS = 32;

export class KeyError extends Error {}

/** An environment variable may carry a PEM with literal `\n` sequences instead of line breaks. */
const pem = (text: string) => (text.includes('\\n') ? text.replace(/\\n/g, '\n') : text);

/**
 * Reads `<dataDir>/jwt-secret`, creating it first if absent. Creation is atomic (a complete
 * temporary file hard-linked into place), so processes starting together agree on one secret.
 */
export function dataDirSecret(dataDir: string): { secret: string; created: boolean } {
  const file = path.join(dataDir, SECRET_FILE);
  let created = false;
  if (!fs.existsSync(file)) {
    fs.mkdirSync(dataDir, { recursive: true });
    const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
    fs.writeFileSync(tmp, `${randomBytes(48).toString('base64url')}\n`, { mode: 0o600 });
    try {
      fs.linkSync(tmp, file);
      created = true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
    } finally {
      fs.rmSync(tmp, { force: true });
    }
  }
  const secret = fs.readFileSync(file, 'utf8').trim();
  if (secret.length < MIN_SECRET_CHARS)
    throw new KeyError(`${file} holds no usable secret (expected at least ${MIN_SECRET_CHARS} characters)`);
  return { secret, created };
}

/**
 * The keys the server verifies with (and `vulndb token` signs with); `jwks`: the key set of
 * JWT_JWKS_URL, which the service creates and fetches (src/roles/apis.ts).
 */
export function tokenKeys(jwt: JwtConfig, dataDir: string, jwks?: JwksKeySet): TokenKeys {
  let secretText = jwt.secret;
  let secretSource: TokenKeys['secretSource'] = jwt.secret !== undefined ? 'JWT_SECRET' : undefined;
  if (jwt.secret === undefined && jwt.publicKey === undefined && jwt.jwksUrl === undefined) {
    const stored = dataDirSecret(dataDir);
    secretText = stored.secret;
    secretSource = stored.created ? 'generated' : 'data-dir';
  }
  let publicKey: KeyObject | undefined;
  if (jwt.publicKey !== undefined) {
    try {
      publicKey = createPublicKey(pem(jwt.publicKey));
    } catch (err) {
      throw new KeyError(`JWT_PUBLIC_KEY is not a usable public key: ${(err as Error).message}`);
    }
    if (publicKey.asymmetricKeyType !== 'rsa') throw new KeyError('JWT_PUBLIC_KEY must be an RSA public key (RS256)');
  }
  return {
    secret: secretText !== undefined ? createSecretKey(Buffer.from(secretText, 'utf8')) : undefined,
    publicKey,
    issuer: jwt.issuer,
    audience: jwt.audience,
    jwks,
    claims: jwt.claims ?? DEFAULT_CLAIMS,
    secretSource,
  };
}

/** Logs once at start how tokens are verified; never the secret itself. */
export function describeKeys(keys: TokenKeys, dataDir: string, log: Logger): void {
  const algorithms = acceptedAlgorithms(keys);
  const file = path.join(dataDir, SECRET_FILE);
  if (keys.secretSource === 'generated') {
    log.info(
      'metrics API: JWT_SECRET, JWT_PUBLIC_KEY and JWT_JWKS_URL are unset; generated a token secret (mint tokens with `vulndb token`)',
      { file },
    );
  } else if (keys.secretSource === 'data-dir') {
    log.info('metrics API: JWT_SECRET, JWT_PUBLIC_KEY and JWT_JWKS_URL are unset; using the token secret kept in the data folder', {
      file,
    });
  }
  const claims = keys.claims ?? DEFAULT_CLAIMS;
  log.info('metrics API tokens', {
    algorithms,
    issuer: keys.issuer ?? null,
    audience: keys.audience ?? null,
    jwksKids: keys.jwks?.kids ?? null,
    claims,
  });
}

/** The algorithms tokens may be signed with: each needs its key (anything else, `none` included, is refused). */
export function acceptedAlgorithms(keys: TokenKeys): string[] {
  return [...(keys.secret ? ['HS256'] : []), ...(keys.publicKey || keys.jwks ? ['RS256'] : []), ...(keys.jwks ? ['ES256'] : [])];
}
