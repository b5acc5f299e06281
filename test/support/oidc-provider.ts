import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { jwkOf, type ProviderKey, providerKey, providerToken } from './jwks-server.js';

/**
 * A stand-in OpenID Connect provider on 127.0.0.1 for the triage page's sign-in (SPEC §15):
 * discovery, an authorization endpoint that signs `claims` in at once (no login form), a token
 * endpoint that checks the PKCE verifier against the challenge (RFC 7636, S256), client id and
 * redirect address, and the key set the service verifies the token with.
 */

export interface OidcProvider {
  issuer: string;
  jwksUrl: string;
  clientId: string;
  /** Code exchanges refused so far, with why. */
  refusals: string[];
  stop(): Promise<void>;
}

const base64url = (b: Buffer) => b.toString('base64url');

export async function startOidcProvider(claims: Record<string, unknown>, clientId = 'vulndb-ui'): Promise<OidcProvider> {
  const key: ProviderKey = providerKey('oidc-test-key', 'RS256');
  const codes = new Map<string, { challenge: string; redirect: string }>();
  const refusals: string[] = [];
  let issuer = '';
  const json = (res: http.ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'Content-Type': 'application/json', 'Access-Control-Allow-Origin': '*' });
    res.end(JSON.stringify(body));
  };
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', issuer);
    if (url.pathname === '/.well-known/openid-configuration') {
      return json(res, 200, {
        issuer,
        authorization_endpoint: `${issuer}/authorize`,
        token_endpoint: `${issuer}/token`,
        jwks_uri: `${issuer}/jwks`,
      });
    }
    if (url.pathname === '/jwks') return json(res, 200, { keys: [jwkOf(key)] });
    if (url.pathname === '/authorize') {
      const q = url.searchParams;
      const redirect = q.get('redirect_uri') ?? '';
      if (q.get('client_id') !== clientId || q.get('code_challenge_method') !== 'S256' || !q.get('code_challenge')) {
        res.writeHead(400).end('bad authorization request');
        return;
      }
      const code = base64url(randomBytes(16));
      codes.set(code, { challenge: q.get('code_challenge')!, redirect });
      res.writeHead(302, { Location: `${redirect}?code=${code}&state=${encodeURIComponent(q.get('state') ?? '')}` }).end();
      return;
    }
    if (url.pathname === '/token' && req.method === 'OPTIONS') {
      res.writeHead(204, { 'Access-Control-Allow-Origin': '*', 'Access-Control-Allow-Headers': 'Content-Type' }).end();
      return;
    }
    if (url.pathname === '/token' && req.method === 'POST') {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        const form = new URLSearchParams(body);
        const grant = codes.get(form.get('code') ?? '');
        codes.delete(form.get('code') ?? '');
        const verifier = form.get('code_verifier') ?? '';
        const why = !grant
          ? 'unknown code'
          : form.get('client_id') !== clientId
            ? 'wrong client'
            : form.get('redirect_uri') !== grant.redirect
              ? 'wrong redirect_uri'
              : base64url(createHash('sha256').update(verifier).digest()) !== grant.challenge
                ? 'PKCE verifier does not match'
                : undefined;
        if (why) {
          refusals.push(why);
          return json(res, 400, { error: 'invalid_grant', error_description: why });
        }
        json(res, 200, { token_type: 'Bearer', access_token: providerToken(key, claims), expires_in: 600 });
      });
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    issuer,
    jwksUrl: `${issuer}/jwks`,
    clientId,
    refusals,
    stop: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
