import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { makeDecision } from '../src/decisions/store.js';
import { ingestBatch } from '../src/ingest/batch.js';
import { rewriteTotals } from '../src/ingest/totals.js';
import { ProcessLocks } from '../src/locks/target-locks.js';
import type { NormalizedReport } from '../src/ingest/normalize.js';
import { prepareReport } from '../src/ingest/prepare.js';
import type { Store } from '../src/storage/gateway.js';
import { emptyStore, freshStore } from './support/engine.js';
import { report } from './support/reports.js';
import {
  contextFromHistory,
  countsFromFindings,
  eventIdMismatches,
  issueCountsFromFindings,
  scoreMismatches,
  snapshot,
  storedContext,
} from './support/snapshot.js';

// Three families: two share a check type but differ in options (SPEC §2.3), one is another check.
const FAMILIES = [
  { checktype_name: 'vulcan-tls', options: '{}' },
  { checktype_name: 'vulcan-tls', options: '{"port":8443}' },
  { checktype_name: 'vulcan-nessus', options: '{}' },
];
const TARGETS = ['a.example.com', 'b.example.com'];
// V3 is V1's issue on another affected resource (another finding); V4 has score 0 and labels.
const VULNS = [
  { summary: 'V1', description: 'one' },
  { summary: 'V2', description: 'two', labels: ['web'] },
  { summary: 'V1', description: 'one', affected_resource: 'https://a/login' },
  { summary: 'V4', description: 'four', labels: ['info', 'web'] },
];

const arbReport = fc.record({
  target: fc.nat({ max: TARGETS.length - 1 }),
  family: fc.nat({ max: FAMILIES.length - 1 }),
  day: fc.nat({ max: 5 }), // few distinct times, so equal-time reports are common
  vulns: fc.subarray([0, 1, 2, 3]),
  scoreSeed: fc.nat({ max: 100 }),
  collapse: fc.boolean(), // report V1 twice: the higher score must win
});

type ReportChoice = { target: number; family: number; day: number; vulns: number[]; scoreSeed: number; collapse: boolean };

const arbHistory = fc.record({
  reports: fc.array(arbReport, { minLength: 1, maxLength: 10 }),
  duplicated: fc.array(fc.nat(), { maxLength: 3 }),
  order: fc.array(fc.nat(), { minLength: 13, maxLength: 13 }),
  batchSizes: fc.array(fc.integer({ min: 1, max: 4 }), { minLength: 13, maxLength: 13 }),
  // Triage decisions made between delivery B's batches: [after which batch, on which finding].
  decisions: fc.array(fc.tuple(fc.nat({ max: 12 }), fc.nat()), { maxLength: 4 }),
});

function toRaw(spec: ReportChoice, i: number) {
  const vulnerabilities = spec.vulns.map((v, k) => ({ ...VULNS[v]!, score: ((spec.scoreSeed + k * 7) % 100) / 10, details: `r${i}` }));
  if (spec.collapse && spec.vulns.includes(0)) vulnerabilities.push({ ...VULNS[0]!, score: 9.9, details: `r${i}-collapsed` });
  const day = String(spec.day + 1).padStart(2, '0');
  return report({
    check_id: `check-${String(i).padStart(2, '0')}`,
    target: TARGETS[spec.target]!,
    ...FAMILIES[spec.family]!,
    end_time: `2024-03-${day} 12:00:00`,
    vulnerabilities,
  });
}

function normalize(raw: Record<string, unknown>): NormalizedReport {
  const p = prepareReport(raw, { maxEventAgeDays: 0, now: 0 });
  if (p.kind !== 'report') throw new Error(`unexpected ${p.kind}`);
  return p.report;
}

async function deliver(store: Store, batches: Record<string, unknown>[][], between?: (batch: number) => Promise<void>) {
  for (const [i, batch] of batches.entries()) {
    await ingestBatch(store, batch.map(normalize), { now: 1_800_000_000 });
    await between?.(i);
  }
  // What the batcher does after its batches (src/ingest/batcher.ts).
  await rewriteTotals(store, new ProcessLocks());
}

describe('ingestion is independent of arrival order', () => {
  it('gives the same periods, statuses, attributes, counts and page context for any delivery order, batching and duplicates', async () => {
    // Two stores, emptied before each history.
    const [a, b] = [await freshStore(), await freshStore()];
    await fc.assert(
      fc.asyncProperty(arbHistory, async (h) => {
        const raws = h.reports.map(toRaw);
        const withDuplicates = [...raws, ...h.duplicated.map((d) => raws[d % raws.length]!)];

        // Delivery A: time order, one report per batch, each duplicate right after its original.
        const timeOrdered = raws
          .map((r, i) => ({ r, i }))
          .sort((a, b) => String(a.r.end_time).localeCompare(String(b.r.end_time)) || a.i - b.i)
          .flatMap(({ r }) => [r, ...withDuplicates.slice(raws.length).filter((d) => d === r)]);
        await emptyStore(a);
        await deliver(
          a,
          timeOrdered.map((r) => [r]),
        );

        // Delivery B: a random permutation in random batch sizes.
        const shuffled = withDuplicates
          .map((r, i) => ({ r, key: h.order[i % h.order.length]! * 100 + i }))
          .sort((x, y) => x.key - y.key)
          .map(({ r }) => r);
        const batches: Record<string, unknown>[][] = [];
        for (let i = 0, b = 0; i < shuffled.length; b++) {
          const size = h.batchSizes[b % h.batchSizes.length]!;
          batches.push(shuffled.slice(i, i + size));
          i += size;
        }
        await emptyStore(b);
        // Decisions are kept apart from the scan history (SPEC §12.3): made between B's batches,
        // they change nothing that the reports produce.
        let decided = 0;
        await deliver(b, batches, async (i) => {
          for (const [after, pick] of h.decisions) {
            if (after !== i) continue;
            const found = await b.query<{ id: string; target: string }>(
              'SELECT toString(id) AS id, toString(target_id) AS target FROM findings FINAL ORDER BY id',
            );
            const f = found[pick % Math.max(found.length, 1)];
            if (!f) continue;
            const kind = pick % 2 === 0 ? 'false_positive' : 'accepted_risk';
            const input = { decision: kind, reason: 'property', expiresAt: kind === 'accepted_risk' ? 1_900_000_000 : null } as const;
            await makeDecision(b, { id: f.id, targetId: f.target }, input, 'tester', 1_709_251_200_000 + decided++);
          }
        });

        const [sa, sb] = [await snapshot(a), await snapshot(b)];
        expect(sb).toEqual(sa);
        const [kept] = await b.query<{ n: number }>('SELECT count() AS n FROM finding_decisions');
        expect(kept!.n).toBe(decided);
        expect(sa.sizes!.sources).toBe(raws.length);
        expect(sa.sizes!.events).toBe(sa.sizes!.distinct_events);
        // The materialized counts agree with the findings they summarise.
        const fromFindings = await countsFromFindings(a);
        expect(sa.counts).toEqual(fromFindings.filter((c) => c.n !== 0));
        expect(sa.issueCounts).toEqual(await issueCountsFromFindings(a));
        // Scores are the latest events' scores, however they were derived.
        expect(await scoreMismatches(a)).toEqual([]);
        expect(await scoreMismatches(b)).toEqual([]);
        // What pages show besides the findings' rows (sql/0012) is what the history says.
        const context = await storedContext(a);
        expect(context).toEqual(await contextFromHistory(a));
        expect(await storedContext(b)).toEqual(context);
        // Event ids derived by the engine (sql/0013) are the worker's.
        expect(await eventIdMismatches(b)).toEqual([]);
      }),
      {
        numRuns: 20,
        // Found by this test: a new family's event at the same time as another family's stored
        // one (the stored one's later check id wins), delivered with that family's fix.
        examples: [
          [
            {
              reports: [
                { target: 1, family: 1, day: 0, vulns: [0], scoreSeed: 0, collapse: false },
                { target: 1, family: 0, day: 1, vulns: [], scoreSeed: 0, collapse: false },
                { target: 1, family: 0, day: 0, vulns: [0], scoreSeed: 0, collapse: true },
              ],
              duplicated: [343342935, 1572489122, 1589290272],
              order: [
                690873551, 508067488, 1861805950, 194870137, 18, 1174778035, 663495617, 542279664, 21, 177004202, 86273849, 2147483635,
                1191656468,
              ],
              batchSizes: [1, 2, 3, 1, 1, 2, 2, 3, 1, 3, 4, 4, 3],
              decisions: [[0, 1]],
            },
          ],
        ],
      },
    );
  }, 300_000);
});
