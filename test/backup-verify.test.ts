import { afterAll, describe, expect, it } from 'vitest';
import { snapshotTables, tableSums } from '../src/backup/manifest.js';
import { differencesOfCopy } from '../src/backup/verify.js';
import { ingestBatch } from '../src/ingest/batch.js';
import { prepareReport } from '../src/ingest/prepare.js';
import { openStore, type Store } from '../src/storage/gateway.js';
import { migrate } from '../src/storage/migrate.js';
import { reports as catalog } from './support/api-catalog.js';
import { testStoreConfig } from './support/engine.js';

/**
 * The verification both snapshot modes end with (src/backup/verify.ts): a copy restored into a
 * scratch database passes only when every source table is there with its recorded rows and sums.
 */

const stores: Store[] = [];
afterAll(async () => {
  for (const s of stores) await s.close();
});

const prepare = (r: unknown) => {
  const p = prepareReport(r, { maxEventAgeDays: 0, now: 1_800_000_000 });
  if (p.kind !== 'report') throw new Error(`unexpected ${p.kind}`);
  return p.report;
};

describe('the verification of a written copy', () => {
  it('passes a faithful copy, names a missing table and a table whose rows differ, and leaves no scratch database', async () => {
    const store = await openStore(testStoreConfig());
    stores.push(store);
    await migrate(store);
    await ingestBatch(store, catalog.map(prepare), { now: 1_800_000_000 });
    const source = (await snapshotTables(store, store.database)).filter((t) => t.engine.endsWith('MergeTree'));
    const recorded = await tableSums(store, store.database, source);
    expect(recorded.find((t) => t.name === 'finding_events')!.rows).toBeGreaterThan(0);
    const dropped = source.find((t) => t.name !== 'finding_events')!.name;

    // A copy of each table, as a restore would leave it; `change` spoils it.
    const copy = (change: (scratch: string) => Promise<void>) => async (scratch: string) => {
      for (const t of source) {
        await store.command(`CREATE TABLE ${scratch}.${t.name} AS ${store.database}.${t.name}`);
        await store.command(`INSERT INTO ${scratch}.${t.name} SELECT * FROM ${store.database}.${t.name}`);
      }
      await change(scratch);
    };
    const check = (change: (scratch: string) => Promise<void>) =>
      differencesOfCopy(store, { source, recorded, restore: copy(change), onTable: () => {} });

    expect(await check(async () => {})).toEqual([]);
    const spoiled = await check(async (scratch) => {
      await store.command(`DROP TABLE ${scratch}.${dropped}`);
      await store.command(`ALTER TABLE ${scratch}.finding_events DELETE WHERE 1 SETTINGS mutations_sync = 1`);
    });
    expect(spoiled).toEqual(
      expect.arrayContaining([
        expect.stringMatching(new RegExp(`^${dropped} .*missing$`)),
        expect.stringMatching(/^finding_events: 0 rows/),
      ]),
    );
    const left = await store.query<{ name: string }>("SELECT name FROM system.databases WHERE name LIKE '%_verify_%'");
    expect(left).toEqual([]);
  });
});
