import { describe, expect, it } from 'vitest';
import { TotalsRewriter } from '../src/ingest/totals.js';
import { ProcessLocks } from '../src/locks/target-locks.js';
import { silentLogger } from '../src/log.js';
import type { Store } from '../src/storage/gateway.js';
import { freshStore } from './support/engine.js';
import { report, V } from './support/reports.js';
import { json, startTestService } from './support/service.js';

/**
 * The rewriter of the findings lists' totals (src/findings/totals.ts): requests made while a
 * rewrite runs are served by one more rewrite after it, so a change committed before a request
 * is always in the values that request waited for.
 */

/** The real store, counting the rewrites it runs; the first one waits for `release`. */
function counting(store: Store) {
  let rewrites = 0;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => (release = resolve));
  const counted: Store = {
    ...store,
    command: async (sql, params) => {
      if (sql.includes('INSERT INTO finding_total_values') && ++rewrites === 1) await gate;
      return store.command(sql, params);
    },
  };
  return { store: counted, rewrites: () => rewrites, release };
}

const setTotals = (store: Store, open: number) => store.insert('finding_totals', [{ scope: 'team:t', open, fixed: 0 }]);
const value = async (store: Store) =>
  (await store.query<{ open: number }>("SELECT open FROM finding_total_values WHERE scope = 'team:t'"))[0]?.open;

describe('the totals rewriter', () => {
  it('serves requests made during a rewrite with one more rewrite that sees their changes', async () => {
    const base = await freshStore();
    const { store, rewrites, release } = counting(base);
    const rewriter = new TotalsRewriter(store, new ProcessLocks(), silentLogger);
    await setTotals(base, 1);
    const first = rewriter.request();
    // Changes committed while the first rewrite runs, each followed by its request.
    const later: Promise<void>[] = [];
    for (let i = 0; i < 5; i++) {
      await setTotals(base, 1);
      later.push(rewriter.request());
    }
    release();
    await first;
    await Promise.all(later);
    expect(await value(base)).toBe(6);
    expect(rewrites()).toBe(2);
    rewriter.close();
  });

  it('keeps retrying a failed rewrite until one succeeds', async () => {
    const base = await freshStore();
    await setTotals(base, 3);
    let failures = 2;
    const flaky: Store = {
      ...base,
      command: (sql, params) => (failures-- > 0 ? Promise.reject(new Error('store unavailable')) : base.command(sql, params)),
    };
    const rewriter = new TotalsRewriter(flaky, new ProcessLocks(), silentLogger, 20);
    await rewriter.request(); // the first attempt fails; retries follow in the background
    const deadline = Date.now() + 5000;
    while ((await value(base)) !== 3 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    expect(await value(base)).toBe(3);
    rewriter.close();
  });
});

/** Findings pages read those values (src/storage/paged.ts) and must not trust one their rows contradict. */
describe('a findings page with kept totals', () => {
  it('answers a page with the total its rows tell, not a kept total they contradict', async () => {
    const svc = await startTestService();
    try {
      const other = { summary: 'Exposed admin panel', score: 9.1 };
      await json(svc.postJson('/checks', report({ check_id: 'c-1', end_time: '2024-01-01 10:00:00', vulnerabilities: [V, other] })), 202);
      await svc.settle();
      const total = async (query: string) => (await json(svc.db(`/findings?${query}`))).pagination.total;
      expect(await total('status=OPEN')).toBe(2);
      // Kept totals not yet rewritten after a change: too high, then too low.
      await svc.store.insert('finding_total_values', [{ scope: 'all', open: 5, fixed: 0 }]);
      expect(await total('status=OPEN&size=10')).toBe(2); // a short page: exactly its rows
      expect(await total('status=OPEN&size=2&page=2')).toBe(2); // an empty page past them: counted
      await svc.store.insert('finding_total_values', [{ scope: 'all', open: 1, fixed: 0 }]);
      expect(await total('status=OPEN&size=2')).toBe(2); // a full page, more rows than the total: counted
    } finally {
      await svc.close();
    }
  });
});
