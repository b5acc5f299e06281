import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

/**
 * A real browser for UI tests: Debian's Chromium (`apt-get install -y chromium`), headless, driven by
 * playwright-core, with a new empty profile and nothing that reaches beyond the pages it is sent to
 * (no background networking, updates or sync). A missing Chromium fails the test that asked for it:
 * nothing is skipped.
 */

export const CHROMIUM = '/usr/bin/chromium';

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

// Page code (the tests' TypeScript has no DOM types), run before each page's own scripts.
const REPORT_CSP_VIOLATIONS = `document.addEventListener('securitypolicyviolation', (e) =>
  console.error('Content-Security-Policy violation: ' + e.violatedDirective + ' ' + e.blockedURI + ' ' + e.sample));`;

export interface TestBrowser {
  context: BrowserContext;
  /** A new tab that records what went wrong in it. */
  newPage(): Promise<WatchedPage>;
  close(): Promise<void>;
}

export interface WatchedPage {
  page: Page;
  /** Uncaught exceptions of the page's scripts. */
  pageErrors: string[];
  /** The console's errors (a refused resource, a Content-Security-Policy violation, …). */
  consoleErrors: string[];
}

export async function launchBrowser(): Promise<TestBrowser> {
  if (!fs.existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: install Debian's Chromium with \`apt-get update && apt-get install -y chromium\``);
  }
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'vulndb-chromium-'));
  const context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: ARGS });
  // A Content-Security-Policy violation becomes a console error the page's watcher records.
  await context.addInitScript({ content: REPORT_CSP_VIOLATIONS });
  return {
    context,
    newPage: async () => {
      const page = await context.newPage();
      const watched: WatchedPage = { page, pageErrors: [], consoleErrors: [] };
      page.on('pageerror', (err) => watched.pageErrors.push(err.message));
      page.on('console', (msg) => {
        if (msg.type() === 'error') watched.consoleErrors.push(msg.text());
      });
      return watched;
    },
    close: async () => {
      await context.close();
      fs.rmSync(profile, { recursive: true, force: true });
    },
  };
}
