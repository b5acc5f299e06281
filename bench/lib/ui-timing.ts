import type { Page } from 'playwright-core';

/**
 * Times one view of the triage page in the browser: from the navigation's start to the moment its
 * content is on screen (checked every animation frame), and each API call the view made, from the
 * browser's Resource Timing entries (the page's /ui/config.json included; all times in ms since the
 * navigation started).
 */

export interface ApiCall {
  /** Path and query, e.g. /api/v1/stats/open?teams=… */
  path: string;
  startMs: number;
  endMs: number;
  ms: number;
}

export interface ViewTiming {
  /** When the view's first figures were on screen. */
  firstFiguresMs: number;
  /** When the whole view was on screen: every API call answered and rendered. */
  completeMs: number;
  /** When the last API call was answered. */
  lastCallEndMs: number;
  calls: ApiCall[];
}

/** Page-side checks of what is on screen (strings: the benchmark's TypeScript has no DOM types). */
export interface ViewSignals {
  /** True once the first figures show. */
  firstFigures: string;
  /** True once the whole view shows (nothing left loading). */
  complete: string;
}

export const OVERVIEW_SIGNALS: ViewSignals = {
  firstFigures: `document.querySelector('[data-testid="open-total"]') !== null`,
  complete: `document.querySelector('[data-testid="open-total"]') !== null && document.querySelector('.chart canvas') !== null && document.querySelector('.loading, [aria-busy="true"]') === null`,
};

export const FINDINGS_SIGNALS: ViewSignals = {
  firstFigures: `document.querySelector('[data-testid="count"]') !== null`,
  complete: `document.querySelector('[data-testid="count"]') !== null && document.querySelector('.loading') === null`,
};

/**
 * performance.now() of the first animation frame where `condition` holds. An evaluated expression,
 * not waitForFunction: that one compiles its predicate in the page, which the page's
 * Content-Security-Policy (no 'unsafe-eval') forbids.
 */
const whenOnScreen = (page: Page, condition: string, timeoutMs: number) =>
  page.evaluate(`new Promise((resolve, reject) => {
    setTimeout(() => reject(new Error('not on screen after ${timeoutMs} ms: ' + document.body.innerText.slice(0, 300))), ${timeoutMs});
    const check = () => ((${condition}) ? resolve(performance.now()) : requestAnimationFrame(check));
    check();
  })`) as Promise<number>;

/** Opens `url` in `page` (signed in already: the token is in its sessionStorage) and times the view. */
export async function timeView(page: Page, url: string, signals: ViewSignals, timeoutMs = 120_000): Promise<ViewTiming> {
  await page.goto('about:blank');
  await page.goto(url, { waitUntil: 'commit' });
  const [firstFiguresMs, completeMs] = await Promise.all([
    whenOnScreen(page, signals.firstFigures, timeoutMs),
    whenOnScreen(page, signals.complete, timeoutMs),
  ]);
  const entries = (await page.evaluate(
    `performance.getEntriesByType('resource').filter((e) => e.initiatorType === 'fetch').map((e) => ({ name: e.name, startTime: e.startTime, responseEnd: e.responseEnd }))`,
  )) as { name: string; startTime: number; responseEnd: number }[];
  const calls = entries.map((e) => {
    const u = new URL(e.name);
    return { path: u.pathname + u.search, startMs: r1(e.startTime), endMs: r1(e.responseEnd), ms: r1(e.responseEnd - e.startTime) };
  });
  return {
    firstFiguresMs: r1(firstFiguresMs),
    completeMs: r1(completeMs),
    lastCallEndMs: r1(Math.max(0, ...calls.map((c) => c.endMs))),
    calls,
  };
}

const r1 = (x: number) => Math.round(x * 10) / 10;
