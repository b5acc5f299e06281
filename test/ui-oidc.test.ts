import { afterAll, beforeAll, expect, test } from 'vitest';
import { buildUi } from '../ui/build.js';
import { ingest } from './support/api.js';
import { launchBrowser, type TestBrowser } from './support/browser.js';
import { type OidcProvider, startOidcProvider } from './support/oidc-provider.js';
import { SLA_REPORTS, SLA_TARGETS, TEAM_X } from './support/sla-history.js';
import { startTestService, type TestService } from './support/service.js';

/**
 * The triage page's sign-in through an identity provider (SPEC §15): authorization code with
 * PKCE, no client secret, the provider's token verified by the service against its key set
 * (JWT_JWKS_URL), and the page then showing that person's teams only.
 */

let idp: OidcProvider;
let svc: TestService;
let browser: TestBrowser;

beforeAll(async () => {
  idp = await startOidcProvider({ sub: 'olga@example.com', teams: [TEAM_X] });
  svc = await startTestService({ env: { JWT_JWKS_URL: idp.jwksUrl, OIDC_ISSUER: idp.issuer, OIDC_CLIENT_ID: idp.clientId } });
  for (const [identifier, teams] of Object.entries(SLA_TARGETS)) {
    if (teams.length > 0) expect((await svc.postJson('/targets', { identifier, teams })).status).toBe(201);
  }
  await ingest(svc, SLA_REPORTS);
  await buildUi();
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await svc?.close();
  await idp?.stop();
});

test("signs in through the provider's page with PKCE and shows the person's team", async () => {
  const { page, pageErrors, consoleErrors } = await browser.newPage();
  await page.goto(`${svc.metricsApiUrl}/ui/findings?status=OPEN`);
  await page.waitForURL(/\/ui\/signin/);
  await page.getByRole('button', { name: 'Sign in with your identity provider' }).click();
  // Provider → /ui/callback → the address first asked for.
  await page.waitForURL(/\/ui\/findings\?status=OPEN$/);
  await expect.poll(() => page.getByTestId('count').textContent()).toBe('3 findings');
  expect(await page.locator('.who').textContent()).toBe('olga@example.com');
  expect(idp.refusals).toEqual([]);
  expect(pageErrors).toEqual([]);
  expect(consoleErrors).toEqual([]);
});
