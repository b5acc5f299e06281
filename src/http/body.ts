import type { Context } from 'koa';
import { dbErrors } from '../errors.js';

/**
 * Reads a JSON request body (SPEC §3.1, §5.2): a Content-Type other than application/json → 415
 * (a missing one is accepted), more than `limit` bytes → 413, invalid JSON → 400.
 */
export async function readJsonBody(ctx: Context, limit: number): Promise<unknown> {
  return parseJsonBody(await readBodyBytes(ctx, limit));
}

/**
 * The body's bytes as received, with the checks of `readJsonBody` before JSON parsing: 415 for a
 * Content-Type other than application/json or one of `otherTypes`, 413 beyond `limit` bytes.
 */
export async function readBodyBytes(ctx: Context, limit: number, otherTypes: readonly string[] = []): Promise<Buffer> {
  const type = ctx.get('Content-Type');
  const mediaType = type.split(';')[0]!.trim().toLowerCase();
  if (type !== '' && mediaType !== 'application/json' && !otherTypes.includes(mediaType)) {
    throw dbErrors.unsupportedMediaType();
  }
  const declared = Number(ctx.get('Content-Length') || NaN);
  if (Number.isFinite(declared) && declared > limit) throw dbErrors.tooLarge();

  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of ctx.req) {
    const buf = chunk as Buffer;
    size += buf.length;
    if (size > limit) {
      ctx.req.resume(); // discard the rest so the connection can answer
      throw dbErrors.tooLarge();
    }
    chunks.push(buf);
  }
  return Buffer.concat(chunks);
}

/** A body's bytes as JSON: 400 when empty or not valid JSON. */
export function parseJsonBody(bytes: Buffer): unknown {
  const text = bytes.toString('utf8');
  if (text.trim() === '') throw dbErrors.badBody('request body must be a JSON document');
  try {
    return JSON.parse(text);
  } catch (err) {
    throw dbErrors.badBody(`request body is not valid JSON: ${(err as Error).message}`);
  }
}
