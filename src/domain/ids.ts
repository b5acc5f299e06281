import { createHash } from 'node:crypto';

/**
 * Deterministic identifiers: UUIDv5 of each entity's natural key (SPEC §11). The same report
 * always yields the same ids, so a retried batch rewrites identical rows and replays of the same
 * history produce the same ids. Keys are JSON arrays so that no choice of separator can make two
 * different keys collide.
 */

const NAMESPACE = Buffer.from('6a1f0c3e5b9d4e7a8c2b1d0f3e5a7c9b', 'hex');

export function uuidv5(name: string): string {
  const hash = createHash('sha1').update(NAMESPACE).update(name, 'utf8').digest();
  hash[6] = (hash[6]! & 0x0f) | 0x50;
  hash[8] = (hash[8]! & 0x3f) | 0x80;
  const hex = hash.subarray(0, 16).toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const key = (...parts: string[]) => uuidv5(JSON.stringify(parts));

export const targetId = (identifier: string) => key('target', identifier);
export const issueId = (summary: string, description: string) => key('issue', summary, description);
export const familyId = (name: string, component: string, options: string) => key('family', name, component, options);
export const sourceId = (name: string, component: string, instance: string, options: string) =>
  key('source', name, component, instance, options);
export const findingId = (targetIdValue: string, issueIdValue: string, affectedResource: string) =>
  key('finding', targetIdValue, issueIdValue, affectedResource);
export const eventId = (findingIdValue: string, sourceIdValue: string) => key('event', findingIdValue, sourceIdValue);
