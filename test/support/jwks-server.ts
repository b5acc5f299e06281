import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { signJwt, type SigningAlgorithm } from '../../src/metrics/sign.js';

/**
 * A stand-in identity provider: key pairs, tokens signed with them, and a JSON Web Key Set served
 * on 127.0.0.1 (port 0) whose keys a test changes (rotation) and whose server it stops
 * (an unreachable provider). `fetches` counts the requests for the set.
 */

export interface ProviderKey {
  kid: string;
  alg: Extract<SigningAlgorithm, 'RS256' | 'ES256'>;
  privateKey: KeyObject;
  publicKey: KeyObject;
}

export function providerKey(kid: string, alg: ProviderKey['alg']): ProviderKey {
  const pair = alg === 'RS256' ? generateKeyPairSync('rsa', { modulusLength: 2048 }) : generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return { kid, alg, ...pair };
}

/** The key as a provider publishes it. */
export const jwkOf = (k: ProviderKey) => ({ ...k.publicKey.export({ format: 'jwk' }), kid: k.kid, alg: k.alg, use: 'sig' });

/** A token as the provider issues it: signed with `k`, its kid in the header, valid for ten minutes. */
export function providerToken(k: ProviderKey, claims: Record<string, unknown>): string {
  const now = Math.floor(Date.now() / 1000);
  return signJwt({ iat: now, exp: now + 600, ...claims }, k.privateKey, k.alg, k.kid);
}

export interface JwksServer {
  url: string;
  /** Requests for the set so far. */
  fetches: number;
  /** What the server answers from now on. */
  publish(keys: ProviderKey[]): void;
  /** Answers the raw body instead (a broken set). */
  publishRaw(body: string): void;
  /** Stops the server: the set becomes unreachable. */
  stop(): Promise<void>;
}

export async function startJwksServer(keys: ProviderKey[]): Promise<JwksServer> {
  let body = '';
  const state: JwksServer = {
    url: '',
    fetches: 0,
    publish: (next) => {
      body = JSON.stringify({ keys: next.map(jwkOf) });
    },
    publishRaw: (raw) => {
      body = raw;
    },
    stop: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
  state.publish(keys);
  const server = http.createServer((req, res) => {
    state.fetches++;
    res.writeHead(req.url === '/jwks.json' ? 200 : 404, { 'Content-Type': 'application/json' });
    res.end(req.url === '/jwks.json' ? body : '{}');
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
  return state;
}
