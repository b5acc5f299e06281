import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { buildUi } from '../ui/build.js';
import { ingest } from './support/api.js';
import { launchBrowser, type TestBrowser, type WatchedPage } from './support/browser.js';
import { METRICS_SECRET, metricsToken } from './support/metrics.js';
import { C, L, SLA_REPORTS, SLA_TARGETS, slaFinding, TEAM_X } from './support/sla-history.js';
import { startTestService, type TestService } from './support/service.js';

/**
 * The triage page (SPEC §15) in Debian's Chromium, on the SLA history of
 * test/support/sla-history.ts: team X holds s1 and s2 (criticals OPEN since May 2024, breached
 * now), s3 (a high, FIXED) and s4 (a medium OPEN, shared with team Y); s5 (a low) is team Y's only.
 */

let svc: TestService;
let browser: TestBrowser;
let watched: WatchedPage;
let page: Page;
const MEMBER = metricsToken({ sub: 'maria', teams: [TEAM_X] });

beforeAll(async () => {
  svc = await startTestService({ env: { JWT_SECRET: METRICS_SECRET } });
  for (const [identifier, teams] of Object.entries(SLA_TARGETS)) {
    if (teams.length > 0) expect((await svc.postJson('/targets', { identifier, teams })).status).toBe(201);
  }
  await ingest(svc, SLA_REPORTS);
  await buildUi();
  browser = await launchBrowser();
  watched = await browser.newPage();
  page = watched.page;
  await page.setViewportSize({ width: 1280, height: 800 });
}, 120_000);

afterAll(async () => {
  // Every view ran without a script error or a Content-Security-Policy violation (refused requests
  // that the tests provoke — 401, 404, 422 — are the console's only errors).
  expect(watched?.pageErrors ?? []).toEqual([]);
  expect((watched?.consoleErrors ?? []).filter((e) => !/status of (401|404|422)/.test(e))).toEqual([]);
  await browser?.close();
  await svc?.close();
});

const ui = (path: string) => `${svc.metricsApiUrl}${path}`;

async function signIn(token: string, path = '/ui/') {
  await page.goto(ui(path));
  await page.waitForURL(/\/ui\/signin/);
  await page.getByLabel('Bearer token').fill(token);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
}

const breachedCriticals = async () => {
  await page.goto(ui('/ui/'));
  return Number(await page.getByTestId('breached-critical').textContent());
};

describe('the triage page', () => {
  test('a member signs in and sees only the findings of their team', async () => {
    await signIn(MEMBER, '/ui/findings?status=OPEN');
    await page.waitForURL(/\/ui\/findings\?status=OPEN/);
    await expect.poll(() => page.getByTestId('count').textContent()).toBe('3 findings');
    const targets = await page.locator('table.findings tbody td:nth-child(3)').allTextContents();
    expect(targets.sort()).toEqual(['s1.sla.example.com', 's2.sla.example.com', 's4.sla.example.com']);
  });

  test('breached criticals, one opened, an accepted risk recorded and revoked, the overview following', async () => {
    expect(await breachedCriticals()).toBe(2);
    await page.goto(ui('/ui/findings?status=OPEN&severity=critical&sla=breached'));
    await expect.poll(() => page.getByTestId('count').textContent()).toBe('2 findings');
    await page.getByRole('link', { name: C.summary }).first().click();
    await page.waitForURL(/\/ui\/findings\/[0-9a-f-]{36}$/);
    const address = page.url();
    await expect.poll(() => page.getByTestId('active-decision').textContent()).toBe('none');

    await page.getByLabel('Decision').selectOption('accepted_risk');
    await page.getByLabel('Reason').fill('WAF rule in place until the upgrade');
    const expiry = new Date(Date.now() + 30 * 86_400_000);
    const local = new Date(expiry.getTime() - expiry.getTimezoneOffset() * 60_000).toISOString().slice(0, 16);
    await page.getByLabel('Expires (your local time)').fill(local);
    await page.getByRole('button', { name: 'Record the decision' }).click();
    await expect.poll(() => page.getByTestId('active-decision').textContent()).toContain('accepted risk');
    const trail = page.getByTestId('audit');
    await expect.poll(() => trail.textContent()).toContain('accepted risk by maria');
    expect(await breachedCriticals()).toBe(1);

    await page.goto(address);
    await page.getByRole('button', { name: 'Revoke' }).click();
    await expect.poll(() => page.getByTestId('active-decision').textContent()).toBe('none');
    await expect.poll(() => page.getByTestId('audit').textContent()).toContain('revoked by maria');
    expect(await breachedCriticals()).toBe(2);
  });

  test('an empty reason shows the API’s validation error in place', async () => {
    await page.goto(ui(`/ui/findings/${slaFinding('s1', C)}`));
    await page.getByLabel('Decision').selectOption('false_positive');
    await page.getByRole('button', { name: 'Record the decision' }).click();
    const alert = page.locator('form.decision [role="alert"]');
    await expect.poll(() => alert.textContent()).toMatch(/reason/i);
    expect(await page.getByTestId('active-decision').textContent()).toBe('none');
  });

  test('the findings filter by issue text, and the address keeps it', async () => {
    await page.goto(ui('/ui/findings?status=OPEN'));
    await expect.poll(() => page.getByTestId('count').textContent()).toBe('3 findings');
    await page.getByLabel('Issue contains').fill('CRITICAL');
    await page.getByRole('button', { name: 'Apply' }).click();
    await page.waitForURL(/summary=CRITICAL/);
    await expect.poll(() => page.getByTestId('count').textContent()).toBe('2 findings');
    await page.reload();
    await expect.poll(() => page.getByTestId('count').textContent()).toBe('2 findings');
    expect(await page.getByLabel('Issue contains').inputValue()).toBe('CRITICAL');
    const issues = await page.locator('table.findings tbody td:nth-child(2)').allTextContents();
    expect(issues).toEqual([C.summary, C.summary]);
  });

  test('the overview asks once for its 90-day chart, by the team’s own paths, and draws it', async () => {
    const asked: string[] = [];
    const record = (r: { url(): string }) => {
      const url = new URL(r.url());
      if (url.pathname.startsWith('/api/v1/')) asked.push(url.pathname + url.search);
    };
    page.on('request', record);
    await page.goto(ui('/ui/'));
    await page.locator('.chart canvas').waitFor();
    await page.locator('[aria-busy="true"]').first().waitFor({ state: 'detached' });
    page.off('request', record);
    const series = asked.filter((p) => p.includes('/stats/open/series'));
    expect(series).toHaveLength(1);
    expect(new URL(series[0]!, 'http://x').searchParams.get('atDates')?.split(',')).toHaveLength(13);
    expect(asked.filter((p) => p.includes('atDate='))).toEqual([]);
    expect(asked.filter((p) => p.includes('/stats/')).every((p) => p.startsWith(`/api/v1/teams/${TEAM_X}/stats/`))).toBe(true);
    expect(asked.length).toBeLessThanOrEqual(5);
  });

  test('the overview shows its figures before its chart has arrived', async () => {
    let release: () => void = () => undefined;
    const held = new Promise<void>((r) => (release = r));
    await page.route(/\/stats\/open\/series/, async (route) => {
      await held;
      await route.continue();
    });
    try {
      await page.goto(ui('/ui/'));
      await expect.poll(() => page.getByTestId('breached-critical').textContent()).toBe('2');
      expect(await page.getByTestId('open-total').textContent()).toBe('3');
      expect(await page.locator('.chart canvas').count()).toBe(0);
      expect(await page.locator('.chart-pending').textContent()).toContain('Loading the chart');
      release();
      await page.locator('.chart canvas').waitFor();
      expect(await page.locator('[aria-busy="true"]').count()).toBe(0);
    } finally {
      release();
      await page.unroute(/\/stats\/open\/series/);
    }
  });

  test('a finding of another team shows "not found"', async () => {
    await page.goto(ui(`/ui/findings/${slaFinding('s5', L)}`));
    await expect.poll(() => page.getByRole('heading', { level: 1 }).textContent()).toBe('Not found');
  });

  test('an expired token returns to sign-in', async () => {
    const expired = metricsToken({ sub: 'maria', teams: [TEAM_X], iat: 1, exp: Math.floor(Date.now() / 1000) - 3600 });
    await page.evaluate(`sessionStorage.setItem('vulndb.token', ${JSON.stringify(expired)})`);
    await page.goto(ui('/ui/findings'));
    await page.waitForURL(/\/ui\/signin\?ended=1/);
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('session has ended');
  });
});

describe('the triage page on a phone-sized screen', () => {
  test('the overview and the findings fit the width without sideways scrolling of the page', async () => {
    const { page: phone } = await browser.newPage();
    await phone.setViewportSize({ width: 390, height: 844 });
    await phone.goto(ui('/ui/signin'));
    await phone.evaluate(`sessionStorage.setItem('vulndb.token', ${JSON.stringify(MEMBER)})`);
    for (const path of ['/ui/', '/ui/findings?status=OPEN']) {
      await phone.goto(ui(path));
      await phone.locator('main h1').first().waitFor();
      await phone.locator('.loading').waitFor({ state: 'detached' });
      // What sticks out, if anything (an empty list: the page fits).
      const wider = `[...document.querySelectorAll('body *')].filter((e) => e.getBoundingClientRect().right > innerWidth + 1 && !e.closest('.scroll')).map((e) => e.tagName + '.' + e.className).slice(0, 5)`;
      expect(await phone.evaluate(wider), path).toEqual([]);
    }
    await phone.close();
  });
});
