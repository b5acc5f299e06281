import type { Caller, PageConfig } from './types.js';

/** A refused request, with the API's own message (database API `message`, metrics API `error`). */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * The page's only way to the service: both APIs with the signed-in person's token. A 401 from
 * either ends the session (an expired or refused token returns to sign-in, SPEC §15).
 */
export class Api {
  constructor(
    private readonly config: PageConfig,
    private readonly token: string,
    private readonly onUnauthorized: () => void,
  ) {}

  metrics<T>(path: string, init: RequestInit = {}): Promise<T> {
    return this.call<T>(`/api/v1${path}`, init);
  }

  db<T>(path: string): Promise<T> {
    return this.call<T>(`${this.config.dbApi}${path}`, {});
  }

  me(): Promise<Caller> {
    return this.metrics<{ caller: Caller }>('/me').then((b) => b.caller);
  }

  private async call<T>(url: string, init: RequestInit): Promise<T> {
    const headers: Record<string, string> = { Authorization: `Bearer ${this.token}` };
    if (init.body !== undefined) headers['Content-Type'] = 'application/json';
    const res = await fetch(url, { ...init, headers });
    if (res.status === 401) {
      this.onUnauthorized();
      throw new ApiError(401, 'Your session has ended: sign in again.');
    }
    if (res.status === 204) return undefined as T;
    const body = (await res.json().catch(() => ({}))) as { message?: string; error?: string };
    if (!res.ok) throw new ApiError(res.status, body.message ?? body.error ?? res.statusText);
    return body as T;
  }
}

/** Query string of the defined values. */
export function query(params: Record<string, string | number | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== '') q.set(k, String(v));
  const s = q.toString();
  return s ? `?${s}` : '';
}
