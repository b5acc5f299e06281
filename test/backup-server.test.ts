import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Destination } from '../src/backup/destination.js';
import { StoreNotEmpty } from '../src/backup/restore.js';
import { restoreServerSnapshot } from '../src/backup/server-restore.js';
import type { ServerManifest } from '../src/backup/server-backups.js';
import { type GateHolder, takeServerSnapshot } from '../src/backup/server-snapshot.js';
import type { SnapshotProgress } from '../src/backup/snapshot.js';
import { ingestBatch } from '../src/ingest/batch.js';
import { prepareReport } from '../src/ingest/prepare.js';
import { closeSharedGate, SharedCommitGate } from '../src/locks/shared-gate.js';
import { silentLogger } from '../src/log.js';
import type { RedisNames } from '../src/queue/redis.js';
import { gatedStore } from '../src/storage/gated-store.js';
import { openStore, type Store } from '../src/storage/gateway.js';
import { loadMigrations, migrate } from '../src/storage/migrate.js';
import { reports as catalog, sid } from './support/api-catalog.js';
import { testStoreConfig } from './support/engine.js';
import { backToSchema15 } from './support/older-schema.js';
import { report, V } from './support/reports.js';
import { REDIS_URL } from './support/service.js';
import { snapshot } from './support/snapshot.js';

/** The schema version of this tree: a snapshot taken now records it, an older one is migrated up to it. */
const latestSchema = loadMigrations().at(-1)!.version;
const laterThan15 = loadMigrations()
  .map((m) => m.version)
  .filter((v) => v > 15);

/**
 * SPEC §14 in server mode, driven against the embedded engine (it runs the same BACKUP … TO
 * Disk(…) ASYNC, system.backups and RESTORE a server does): batches commit through the shared
 * commit gate in Redis, as another process's worker would, while the snapshot is taken; each
 * batch is wholly in the backup or wholly out, the restored store equals one that ingested exactly
 * the batches it holds, and the refusals are the operator's to act on.
 */

const stores: Store[] = [];
const connections: Redis[] = [];
const open = async () => {
  const store = await openStore(testStoreConfig());
  stores.push(store);
  return store;
};
const connect = () => {
  const redis = new Redis(REDIS_URL, { maxRetriesPerRequest: null });
  connections.push(redis);
  return redis;
};
const names: RedisNames = { queuePrefix: 'bull', keyPrefix: `test-backup-${randomUUID()}` };
const hold: GateHolder = (work) => closeSharedGate(connect(), names, { maxHoldMs: 30_000, drainMs: 30_000 }, work);
const disk = (name: string): Destination => ({ kind: 'disk', disk: 'default', name: `backups/${name}` });
const prepare = (raw: Record<string, unknown>) => {
  const p = prepareReport(raw, { maxEventAgeDays: 0, now: 0 });
  if (p.kind !== 'report') throw new Error(`not a report: ${p.kind}`);
  return p.report;
};

/** The n-th report of the stream: one of five targets, its vulnerabilities changing from scan to scan. */
const streamed = (n: number) =>
  report({
    check_id: `srv-${n}`,
    checktype_name: 'vulcan-web',
    target: `srv${n % 5}.example.com`,
    end_time: `2024-03-${String(1 + (n % 27)).padStart(2, '0')} 0${n % 10}:00:00`,
    vulnerabilities: [V].filter(() => n % 3 !== 0),
  });

afterAll(async () => {
  for (const s of stores) await s.close();
  for (const r of connections) await r.quit();
});

describe('a server-mode snapshot taken while batches commit through the shared gate', () => {
  let source: Store;
  let manifest: ServerManifest;
  const progress: SnapshotProgress[] = [];
  const batches: string[][] = [];
  const dest = disk(randomUUID());

  beforeAll(async () => {
    source = await open();
    await migrate(source);
    const gate = new SharedCommitGate(connect(), names, silentLogger, { leaseMs: 2000, pollMs: 10 });
    const writer = gatedStore(source, gate);
    const commit = async (raws: Record<string, unknown>[]) => {
      await gate.pass(() => ingestBatch(writer, raws.map(prepare), { now: 1_800_000_000 }));
      batches.push(raws.map((r) => sid(String(r.check_id))));
    };
    await commit(catalog);
    let streaming = true;
    const stream = (async () => {
      for (let n = 0; streaming; n += 3) await commit([streamed(n), streamed(n + 1), streamed(n + 2)]);
    })();
    // Some of the stream before the snapshot, some after it.
    const committed = async (n: number) => {
      while (batches.length < n) await new Promise((resolve) => setTimeout(resolve, 20));
    };
    await committed(3);
    manifest = await takeServerSnapshot({ store: source, hold, log: silentLogger }, dest, (p) => progress.push(p));
    await committed(batches.length + 2);
    streaming = false;
    await stream;
  }, 120_000);

  it('shows progress, records the instant, its pause and the size, and holds part of the stream', async () => {
    expect(progress.map((p) => p.phase)).toEqual(expect.arrayContaining(['freeze', 'sums', 'backup', 'verify']));
    expect(manifest).toMatchObject({ destination: `disk:default/${dest.kind === 'disk' ? dest.name : ''}`, schema_version: latestSchema });
    expect(manifest.files).toBeGreaterThan(0);
    expect(manifest.bytes).toBeGreaterThan(0);
    expect(manifest.pause_ms).toBeLessThan(10_000);
    const stored = (await source.query<{ n: number }>('SELECT count() AS n FROM sources FINAL'))[0]!.n;
    expect(manifest.sources).toBeGreaterThan(catalog.length);
    expect(manifest.sources).toBeLessThan(stored);
  });

  it('restored, holds each batch wholly or not at all, and equals a store that ingested exactly those batches', async () => {
    const target = await open();
    const { manifest: read, migrations } = await restoreServerSnapshot(target, dest, silentLogger);
    // The manifest inside the backup was written before the server counted its size.
    expect(read).toEqual({ ...manifest, bytes: 0, files: 0 });
    expect(migrations).toEqual([]);
    const held = new Set((await target.query<{ id: string }>('SELECT toString(id) AS id FROM sources')).map((r) => r.id));
    const whole = batches.filter((b) => b.every((id) => held.has(id)));
    expect(batches.filter((b) => b.some((id) => held.has(id)) && !b.every((id) => held.has(id)))).toEqual([]);
    expect(whole.flat().length).toBe(held.size);

    const reference = await open();
    await migrate(reference);
    const raws = new Map<string, Record<string, unknown>>(catalog.map((r) => [sid(String(r.check_id)), r]));
    for (let n = 0; n < 3 * batches.length; n++) raws.set(sid(`srv-${n}`), streamed(n));
    for (const b of whole)
      await ingestBatch(
        reference,
        b.map((id) => prepare(raws.get(id)!)),
        { now: 1_800_000_000 },
      );
    expect(await snapshot(target)).toEqual(await snapshot(reference));
  }, 120_000);

  it('refuses a destination that exists, an unknown disk, a missing backup and a store holding data', async () => {
    await expect(takeServerSnapshot({ store: source, hold, log: silentLogger }, dest)).rejects.toThrow(/exists already/);
    await expect(
      takeServerSnapshot({ store: source, hold, log: silentLogger }, { kind: 'disk', disk: 'nosuchdisk', name: 'x' }),
    ).rejects.toThrow(/no disk named nosuchdisk/);
    const empty = await open();
    await expect(restoreServerSnapshot(empty, disk(randomUUID()), silentLogger)).rejects.toThrow(/there is no backup at disk:default\//);
    await expect(restoreServerSnapshot(source, dest, silentLogger)).rejects.toBeInstanceOf(StoreNotEmpty);
    // Nothing of a refused snapshot is left behind: no frozen or scratch database.
    const scratch = await source.query<{ name: string }>(
      `SELECT name FROM system.databases WHERE startsWith(name, {db:String}) AND name != {db:String}`,
      { db: source.database },
    );
    expect(scratch).toEqual([]);
  }, 60_000);
});

describe('a server-mode snapshot of an older schema', () => {
  it('is restored with the later migrations applied, equal to the source migrated in place', async () => {
    const old = await open();
    await migrate(old);
    await ingestBatch(old, catalog.map(prepare), { now: 1_800_000_000 });
    await backToSchema15(old);

    const dest = disk(randomUUID());
    const manifest = await takeServerSnapshot({ store: old, hold, log: silentLogger }, dest);
    expect(manifest.schema_version).toBe(15);
    const target = await open();
    const { migrations } = await restoreServerSnapshot(target, dest, silentLogger);
    expect(migrations).toEqual(laterThan15);
    expect(await migrate(old)).toEqual(laterThan15);
    const derived = (s: Store) =>
      s.query(
        `SELECT toString(id) AS id, fix_seconds, toUInt32(latest_at) AS latest, toString(status) AS status FROM findings FINAL ORDER BY id`,
      );
    expect(await derived(target)).toEqual(await derived(old));
    expect(await snapshot(target)).toEqual(await snapshot(old));
  }, 60_000);
});
