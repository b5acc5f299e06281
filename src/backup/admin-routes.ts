import { PassThrough } from 'node:stream';
import type Router from '@koa/router';
import type { Context } from 'koa';
import { z } from 'zod';
import { ApiError } from '../errors.js';
import { readJsonBody } from '../http/body.js';
import { checkSnapshotDir, takeSnapshot, type SnapshotDeps } from './snapshot.js';

/**
 * POST /admin/backup on the admin listener (SPEC §10.1, §14): `vulndb backup` asks the service
 * that owns the embedded data folder to take a snapshot. The answer is a stream of JSON lines,
 * `{"progress": …}` while it runs and one last `{"manifest": …}` (verified) or `{"error": …}`;
 * refusals come before it starts, as `{"message"}` with 400, 409 or 422 (401 from the listener's token check).
 */

export const BACKUP_PATH = '/admin/backup';

/** ADMIN_TOKEN, when set, is required by the admin listener's own middleware (src/admin/access.ts). */
export type BackupRouteDeps = SnapshotDeps;

const body = z.object({ dir: z.string().min(1).max(4096) }).strict();

function refuse(ctx: Context, status: number, message: string): void {
  ctx.status = status;
  ctx.body = { message };
}

export function mountBackupRoute(router: Router, deps: BackupRouteDeps): void {
  let running = false;
  router.post(BACKUP_PATH, async (ctx) => {
    let value: unknown;
    try {
      value = await readJsonBody(ctx, 16 * 1024);
    } catch (err) {
      if (err instanceof ApiError) return refuse(ctx, err.status, err.message);
      throw err;
    }
    const parsed = body.safeParse(value);
    if (!parsed.success)
      return refuse(ctx, 400, `invalid body: ${parsed.error.issues[0]?.message ?? 'expected {"dir": "<absolute path>"}'}`);
    const { dir } = parsed.data;
    const refusal = checkSnapshotDir(dir);
    if (refusal) return refuse(ctx, 422, refusal);
    if (running) return refuse(ctx, 409, 'a snapshot is being taken already');
    running = true;
    const out = new PassThrough();
    const line = (value: unknown) => out.write(`${JSON.stringify(value)}\n`);
    ctx.status = 200;
    ctx.type = 'application/x-ndjson';
    ctx.body = out;
    void takeSnapshot(deps, dir, (progress) => line({ progress }))
      .then(
        (manifest) => line({ manifest }),
        (err: unknown) => {
          deps.log.error('snapshot failed', { dir, err });
          line({ error: { message: err instanceof Error ? err.message : String(err) } });
        },
      )
      .finally(() => {
        running = false;
        out.end();
      });
  });
}
