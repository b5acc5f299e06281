import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { createLogger } from '../src/log.js';
import { openStore } from '../src/storage/gateway.js';
import { startService } from '../src/service.js';
import { testDataDir, testStoreConfig } from './support/engine.js';
import { report, V } from './support/reports.js';
import { startTestService } from './support/service.js';

describe('graceful shutdown', () => {
  it('finishes the jobs in flight before closing the store, and stops answering HTTP first', async () => {
    // A long batch wait keeps the reports pending in the batcher when close() is called.
    const svc = await startTestService({ env: { INGEST_BATCH_WAIT_MS: '2000' } });
    const reports = Array.from({ length: 5 }, (_, i) =>
      report({ check_id: `s-${i}`, target: `t${i}.example.com`, end_time: '2024-01-01 10:00:00', vulnerabilities: [V] }),
    );
    for (const r of reports) expect((await svc.postJson('/checks', r)).status).toBe(202);
    // Wait until the worker holds them (active), then stop everything.
    for (let i = 0; i < 100 && (await svc.queue!.getJobCounts('active')).active! < reports.length; i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const storeConfig = { ...svc.config.store };
    await svc.close();

    await expect(fetch(`${svc.dbApiUrl}/healthcheck`)).rejects.toThrow();
    const store = await openStore(storeConfig);
    const [row] = await store.query<{ n: number }>('SELECT count() AS n FROM sources');
    expect(row!.n).toBe(reports.length);
    await store.close();
  });

  it('starts with Redis unreachable and answers 503 "Queue Unavailable" instead of hanging', async () => {
    const config = loadConfig({
      DATA_DIR: path.join(testDataDir(), 'no-redis'),
      DB_API_PORT: '0',
      METRICS_API_PORT: '0',
      HOST: '127.0.0.1',
      REDIS_URL: 'redis://127.0.0.1:1',
      ADMIN_PORT: '0',
      LOG_LEVEL: 'silent',
    });
    config.store = testStoreConfig();
    const svc = await startService(config, { api: true, worker: false, log: createLogger('silent') });
    try {
      const res = await fetch(`${svc.dbApiUrl}/checks`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify(report({ check_id: 'x', end_time: '2024-01-01 10:00:00' })),
      });
      expect(res.status).toBe(503);
      expect(await res.json()).toEqual({ message: 'Queue Unavailable' });
      expect((await fetch(`${svc.dbApiUrl}/stats/size`)).status).toBe(200);
    } finally {
      await svc.close();
    }
  });
});
