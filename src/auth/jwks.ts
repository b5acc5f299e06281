import { createPublicKey, type JsonWebKey, type KeyObject } from 'node:crypto';
import { z } from 'zod';
import type { Logger } from '../log.js';

/**
 * The JSON Web Key Set of an identity provider (SPEC §8.1, JWT_JWKS_URL): RS256 and ES256 keys by
 * `kid`. Fetched at start (`refresh()`), again when the set is an hour old and when a token names
 * an unknown `kid` — both checked when a key is asked for, so an idle service fetches nothing and
 * no timer outlives the service — and never more than once a minute, however many tokens name
 * unknown keys. A set that cannot be fetched or read keeps the last one fetched.
 */

export type JwksAlgorithm = 'RS256' | 'ES256';

export interface JwksOptions {
  url: string;
  log: Logger;
  /** Epoch milliseconds; tests move it. */
  now?: () => number;
  /** Age at which the set is fetched again (an hour). */
  maxAgeMs?: number;
  /** Least time between two fetches (a minute). */
  minIntervalMs?: number;
  /** Time limit of one fetch. */
  timeoutMs?: number;
}

interface VerificationKey {
  alg: JwksAlgorithm;
  key: KeyObject;
}

const HOUR_MS = 3_600_000;
const MINUTE_MS = 60_000;
/** A provider's set is a few kilobytes; more is not a key set. */
const MAX_SET_BYTES = 1024 * 1024;

const keySetSchema = z.object({ keys: z.array(z.record(z.string(), z.unknown())) });

/** The algorithm a JWK verifies, or why it is not used. */
function algorithmOf(jwk: Record<string, unknown>): JwksAlgorithm | string {
  if (typeof jwk.kid !== 'string' || jwk.kid === '') return 'no kid';
  if (jwk.use !== undefined && jwk.use !== 'sig') return `use ${String(jwk.use)}`;
  const alg = jwk.kty === 'RSA' ? 'RS256' : jwk.kty === 'EC' && jwk.crv === 'P-256' ? 'ES256' : undefined;
  if (alg === undefined) return `key type ${String(jwk.kty)}${jwk.crv !== undefined ? ` ${String(jwk.crv)}` : ''}`;
  // A key published for another algorithm (e.g. PS256, RS512) must not verify RS256 tokens.
  if (jwk.alg !== undefined && jwk.alg !== alg) return `alg ${String(jwk.alg)}`;
  return alg;
}

/** The usable keys of a set by kid, and what was left out (logged). */
function readKeySet(body: unknown): { keys: Map<string, VerificationKey>; skipped: string[] } {
  const set = keySetSchema.parse(body);
  const keys = new Map<string, VerificationKey>();
  const skipped: string[] = [];
  for (const jwk of set.keys) {
    const alg = algorithmOf(jwk);
    const kid = String(jwk.kid);
    if (alg !== 'RS256' && alg !== 'ES256') {
      skipped.push(`${kid}: ${alg}`);
      continue;
    }
    try {
      keys.set(kid, { alg, key: createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' }) });
    } catch (err) {
      skipped.push(`${kid}: ${(err as Error).message}`);
    }
  }
  return { keys, skipped };
}

export class JwksKeySet {
  private keys = new Map<string, VerificationKey>();
  /** When the set in use was fetched; undefined until one was. */
  private fetchedAt: number | undefined;
  private attemptedAt: number | undefined;
  private inFlight: Promise<boolean> | undefined;
  private readonly now: () => number;
  private readonly maxAgeMs: number;
  private readonly minIntervalMs: number;
  private readonly timeoutMs: number;

  constructor(private readonly opts: JwksOptions) {
    this.now = opts.now ?? Date.now;
    this.maxAgeMs = opts.maxAgeMs ?? HOUR_MS;
    this.minIntervalMs = opts.minIntervalMs ?? MINUTE_MS;
    this.timeoutMs = opts.timeoutMs ?? 5000;
  }

  /** The kids of the set in use. */
  get kids(): string[] {
    return [...this.keys.keys()];
  }

  /** The key of `kid` for a token of `alg`; undefined when the set has none (a refused token). */
  async keyFor(kid: string, alg: string): Promise<KeyObject | undefined> {
    const stale = this.fetchedAt === undefined || this.now() - this.fetchedAt >= this.maxAgeMs;
    // A fetch under way may bring the key: the tokens that arrive meanwhile wait for it too.
    if (this.inFlight !== undefined) await this.inFlight;
    else if ((stale || !this.keys.has(kid)) && this.mayFetch()) await this.refresh();
    const found = this.keys.get(kid);
    return found !== undefined && found.alg === alg ? found.key : undefined;
  }

  /**
   * Fetches the set now (at start; otherwise through `keyFor`'s rules); concurrent callers share one
   * fetch. True when a set was read; on failure the last set stays and the reason is logged.
   */
  refresh(): Promise<boolean> {
    this.inFlight ??= this.fetchSet().finally(() => {
      this.inFlight = undefined;
    });
    return this.inFlight;
  }

  private mayFetch(): boolean {
    return this.attemptedAt === undefined || this.now() - this.attemptedAt >= this.minIntervalMs;
  }

  private async fetchSet(): Promise<boolean> {
    const { url, log } = this.opts;
    this.attemptedAt = this.now();
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(this.timeoutMs), headers: { Accept: 'application/json' } });
      const text = await res.text();
      if (!res.ok) throw new Error(`HTTP ${res.status}`);
      if (Buffer.byteLength(text) > MAX_SET_BYTES) throw new Error(`larger than ${MAX_SET_BYTES} bytes`);
      const { keys, skipped } = readKeySet(JSON.parse(text));
      if (skipped.length > 0) log.debug('JWKS: keys left out', { url, skipped });
      // An empty set is far likelier a broken answer (a proxy, a misconfigured realm) than a provider without keys.
      if (keys.size === 0) throw new Error(`no RS256 or ES256 signing key with a kid (left out: ${skipped.join('; ') || 'none'})`);
      this.keys = keys;
      this.fetchedAt = this.now();
      log.info('JWKS fetched', { url, kids: this.kids });
      return true;
    } catch (err) {
      const detail = err instanceof z.ZodError ? 'not a JSON Web Key Set' : (err as Error).message;
      log.warn('JWKS could not be fetched; keeping the last set', { url, error: detail, kids: this.kids });
      return false;
    }
  }
}
