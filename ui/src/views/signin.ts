import { useState } from 'preact/hooks';
import { Api } from '../api.js';
import { html } from '../html.js';
import { navigate } from '../router.js';
import { session, startProviderSignIn } from '../session.js';
import type { PageConfig } from '../types.js';

/** Sign-in: a pasted bearer token, or the identity provider's page when the service names one. */
export function SignIn({ config, params }: { config: PageConfig; params: URLSearchParams }) {
  // `vulndb serve --demo` prints an address with a token in the fragment, which no server sees.
  const [token, setToken] = useState(() => new URLSearchParams(location.hash.slice(1)).get('token') ?? '');
  const [error, setError] = useState(params.get('ended') ? 'Your session has ended: sign in again.' : '');
  const next = params.get('next') ?? '/ui/';
  const submit = async (e: Event) => {
    e.preventDefault();
    const api = new Api(config, token.trim(), () => {});
    try {
      await api.me();
      session.save(token);
      navigate(next.startsWith('/ui') ? next : '/ui/', true);
    } catch {
      setError('This token was refused (expired, badly signed, or not for this service).');
    }
  };
  return html`<main class="signin">
    <h1>vulndb triage</h1>
    ${
      config.oidc &&
      html`<p><button type="button" class="primary" onClick=${() => startProviderSignIn(config.oidc!, next).catch((e: Error) => setError(e.message))}>
        Sign in with your identity provider</button></p><p>or paste a token:</p>`
    }
    <form onSubmit=${submit}>
      <label for="token">Bearer token</label>
      <textarea id="token" name="token" rows="5" required value=${token} onInput=${(e: Event) => setToken((e.target as HTMLTextAreaElement).value)}
        aria-describedby="token-help"></textarea>
      <p id="token-help" class="help">A token from <code>vulndb token</code> or your identity provider. It is kept for this browser tab only.</p>
      ${error && html`<p role="alert" class="error">${error}</p>`}
      <button type="submit" class="primary">Sign in</button>
    </form>
  </main>`;
}
