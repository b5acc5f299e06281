import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type TestBrowser } from './support/browser.js';
import { startTestService, type TestService } from './support/service.js';

/**
 * GET /docs in a real browser (headless Chromium): the renderer, served by the service itself under
 * a strict Content-Security-Policy, shows every operation of /openapi.json, without a script error
 * or a refused resource — also with DB_API_AUTH=jwt, where the page has no token to send.
 */

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

interface Operation {
  method: string;
  path: string;
  operationId: string;
  summary: string;
}

interface DocumentedOperation {
  operationId?: string;
  summary?: string;
  responses?: Record<string, unknown>;
}

type Document = { paths: Record<string, Record<string, DocumentedOperation>> };

function operationsOf(doc: Document): (Operation & { codes: string[] })[] {
  return Object.entries(doc.paths).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.includes(method))
      .map(([method, op]) => ({
        method,
        path,
        operationId: op.operationId ?? '',
        summary: op.summary ?? '',
        codes: Object.keys(op.responses ?? {}),
      })),
  );
}

describe('/docs in headless Chromium', () => {
  let svc: TestService;
  let browser: TestBrowser;
  beforeAll(async () => {
    // Launched first: a missing Chromium fails at once, naming the package to install.
    browser = await launchBrowser();
    svc = await startTestService({ worker: false, env: { JWT_SECRET: 'docs-browser-test-secret-0123456789abcdef', DB_API_AUTH: 'jwt' } });
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await svc?.close();
  });

  it('given the document, when /docs is opened, then every operation is on the page and nothing failed', async () => {
    const doc = (await (await svc.db('/openapi.json')).json()) as Document;
    const operations = operationsOf(doc);
    expect(operations.length).toBeGreaterThan(30);
    expect(operations.every((o) => o.operationId !== '')).toBe(true);

    const { page, pageErrors, consoleErrors } = await browser.newPage();
    const requested: string[] = [];
    page.on('request', (req) => requested.push(req.url()));
    const response = await page.goto(`${svc.dbApiUrl}/docs`);
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
    await page
      .locator('.opblock')
      .nth(operations.length - 1)
      .waitFor({ timeout: 30_000 });

    const shown = await page.locator('.opblock').evaluateAll((blocks) =>
      blocks.map((b) => ({
        method: b.querySelector('.opblock-summary-method')?.textContent?.trim().toLowerCase() ?? '',
        path: b.querySelector('.opblock-summary-path')?.getAttribute('data-path') ?? '',
        operationId: b.querySelector('.opblock-summary-operation-id')?.textContent?.trim() ?? '',
        summary: b.querySelector('.opblock-summary-description')?.textContent?.trim() ?? '',
      })),
    );
    const key = (o: Operation) => `${o.method} ${o.path} ${o.operationId} ${o.summary}`;
    expect(shown.map(key).sort()).toEqual(operations.map(key).sort());

    // An operation whose success is a 204 without body (what broke the former page) opens too.
    const noContent = operations.find((o) => o.codes.includes('204'));
    expect(noContent).toBeDefined();
    const block = page.locator('.opblock').filter({ has: page.getByText(noContent!.operationId, { exact: true }) });
    await block.locator('.opblock-summary-control').click();
    await block.locator('.responses-table .response[data-code="204"]').waitFor({ timeout: 30_000 });
    expect(pageErrors).toEqual([]);
    expect(consoleErrors).toEqual([]);
    // Everything came from the service: no CDN, no validator badge, no other host.
    const origin = new URL(svc.dbApiUrl!).origin;
    expect(requested.filter((u) => !u.startsWith(origin) && !u.startsWith('data:'))).toEqual([]);
  }, 60_000);

  it('given /docs/ with a trailing slash, when opened, then it lands on /docs and renders', async () => {
    const { page, pageErrors } = await browser.newPage();
    await page.goto(`${svc.dbApiUrl}/docs/`);
    expect(new URL(page.url()).pathname).toBe('/docs');
    await page.locator('.opblock').first().waitFor({ timeout: 30_000 });
    expect(pageErrors).toEqual([]);
  }, 60_000);
});
