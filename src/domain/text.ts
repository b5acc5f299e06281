import { z } from 'zod';

/**
 * SPEC §3.3 item 6: strings may hold any text, and an unpaired UTF-16 surrogate (JSON "\ud800")
 * is stored and shown as U+FFFD. The store's JSON reader refuses such escapes, so every string
 * a client sends is made well formed where it is validated, before it reaches a queue or the store.
 */

/** The string with each unpaired surrogate replaced by U+FFFD. */
export const wellFormed = (s: string): string => (s.isWellFormed() ? s : s.toWellFormed());

/** A copy of a parsed JSON value whose strings (keys included) are well formed; the value itself when they already are. */
export function wellFormedJson<T>(value: T): T {
  return (needsRepair(value) ? repair(value) : value) as T;
}

function needsRepair(value: unknown): boolean {
  if (typeof value === 'string') return !value.isWellFormed();
  if (typeof value !== 'object' || value === null) return false;
  if (Array.isArray(value)) return value.some(needsRepair);
  for (const [k, v] of Object.entries(value)) if (!k.isWellFormed() || needsRepair(v)) return true;
  return false;
}

function repair(value: unknown): unknown {
  if (typeof value === 'string') return wellFormed(value);
  if (typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map(repair);
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) out[wellFormed(k)] = repair(v);
  return out;
}

/**
 * The string schema of every write surface (SPEC §5.6): any text is accepted and its unpaired
 * surrogates become U+FFFD before any later check, the store or a queue sees it. An overwrite keeps
 * it a string schema, so limits chain after it (`safeText().max(n)`) and the OpenAPI document shows
 * a plain string.
 */
export const safeText = (params?: Parameters<typeof z.string>[0]) => z.string(params).overwrite(wellFormed);
