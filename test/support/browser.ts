import fs from 'node:fs';
import { type Browser, chromium } from 'playwright-core';

/**
 * Debian's Chromium (`apt-get install chromium`, done by .ci/run) driven by playwright-core, with
 * the flags this closed network needs. A missing browser fails the test that asks for one.
 */

export const CHROMIUM = '/usr/bin/chromium';

/** A headless Chromium with a new empty profile (playwright's own temporary one). */
export function launchChromium(): Promise<Browser> {
  if (!fs.existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}
