/**
 * npm run ui:screenshots -- <metrics API URL> <token> — the README's pictures of the triage page:
 * the overview, the findings (breached, highest score first) and the first of those findings, at
 * 1280×800, into docs/images/. Run it against `npm run demo` once its history is ingested.
 */
import fs from 'node:fs';
import { launchBrowser } from '../test/support/browser.js';

const [base, token] = process.argv.slice(2);
if (!base || !token) throw new Error('usage: npm run ui:screenshots -- <metrics API URL> <token>');
fs.mkdirSync('docs/images', { recursive: true });
const browser = await launchBrowser();
const { page } = await browser.newPage();
await page.setViewportSize({ width: 1280, height: 800 });
await page.goto(`${base}/ui/signin`);
await page.evaluate(`sessionStorage.setItem('vulndb.token', ${JSON.stringify(token)})`);
const shoot = async (path: string, file: string) => {
  await page.goto(`${base}${path}`);
  await page.locator('main h1').first().waitFor();
  await page.locator('.loading').waitFor({ state: 'detached' });
  // The overview's parts arrive one by one, each marked aria-busy until it is there.
  await page.locator('[aria-busy="true"]').first().waitFor({ state: 'detached' });
  await page.screenshot({ path: `docs/images/${file}`, fullPage: false });
  console.log(`docs/images/${file}`);
};
await shoot('/ui/', 'ui-overview.png');
await shoot('/ui/findings?status=OPEN&sla=breached', 'ui-findings.png');
const first = await page.locator('table.findings tbody a').first().getAttribute('href');
await shoot(first!, 'ui-finding.png');
await browser.close();
