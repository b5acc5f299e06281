/**
 * The signed-in token, kept for the browser session only (sessionStorage), and the provider's
 * sign-in by authorization code with PKCE (RFC 7636) when the service names one: no client secret
 * lives in the page.
 */

const TOKEN = 'vulndb.token';
const PKCE = 'vulndb.pkce';

export const session = {
  token: (): string | null => sessionStorage.getItem(TOKEN),
  save: (token: string) => sessionStorage.setItem(TOKEN, token.trim()),
  end: () => sessionStorage.removeItem(TOKEN),
};

const base64url = (bytes: Uint8Array) =>
  btoa(String.fromCharCode(...bytes))
    .replace(/\+/g, '-')
    .replace(/\//g, '_')
    .replace(/=+$/, '');
const randomText = () => base64url(crypto.getRandomValues(new Uint8Array(32)));

interface Discovery {
  authorization_endpoint: string;
  token_endpoint: string;
}

async function discover(issuer: string): Promise<Discovery> {
  const res = await fetch(`${issuer.replace(/\/$/, '')}/.well-known/openid-configuration`);
  if (!res.ok) throw new Error(`the identity provider answered ${res.status}`);
  return (await res.json()) as Discovery;
}

const callbackUrl = () => `${location.origin}/ui/callback`;

/** Sends the browser to the provider's sign-in page. */
export async function startProviderSignIn(oidc: { issuer: string; clientId: string }, next: string): Promise<void> {
  const { authorization_endpoint } = await discover(oidc.issuer);
  const verifier = randomText();
  const state = randomText();
  const challenge = base64url(new Uint8Array(await crypto.subtle.digest('SHA-256', new TextEncoder().encode(verifier))));
  sessionStorage.setItem(PKCE, JSON.stringify({ verifier, state, next }));
  const url = new URL(authorization_endpoint);
  url.search = new URLSearchParams({
    response_type: 'code',
    client_id: oidc.clientId,
    redirect_uri: callbackUrl(),
    scope: 'openid profile email',
    code_challenge: challenge,
    code_challenge_method: 'S256',
    state,
  }).toString();
  location.assign(url.toString());
}

/** Completes the provider's sign-in at /ui/callback; returns the address to go on to. */
export async function finishProviderSignIn(oidc: { issuer: string; clientId: string }, params: URLSearchParams): Promise<string> {
  const saved = JSON.parse(sessionStorage.getItem(PKCE) ?? 'null') as { verifier: string; state: string; next: string } | null;
  sessionStorage.removeItem(PKCE);
  if (!saved || params.get('state') !== saved.state) throw new Error('the sign-in was not started from this page');
  const code = params.get('code');
  if (!code) throw new Error(params.get('error_description') ?? params.get('error') ?? 'the provider sent no code');
  const { token_endpoint } = await discover(oidc.issuer);
  const res = await fetch(token_endpoint, {
    method: 'POST',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code',
      code,
      redirect_uri: callbackUrl(),
      client_id: oidc.clientId,
      code_verifier: saved.verifier,
    }),
  });
  if (!res.ok) throw new Error(`the provider refused the code (${res.status})`);
  const tokens = (await res.json()) as { access_token?: string; id_token?: string };
  // Some providers issue opaque access tokens; the service verifies JWTs against the provider's keys.
  const jwt = [tokens.access_token, tokens.id_token].find((t) => t?.split('.').length === 3);
  if (!jwt) throw new Error('the provider returned no JSON Web Token');
  session.save(jwt);
  return saved.next;
}
