import { hash } from 'node:crypto';

/**
 * Deterministic identifiers: UUIDv5 of each entity's natural key (SPEC §11). The same report
 * always yields the same ids, so a retried batch rewrites identical rows and replays of the same
 * history produce the same ids. Keys are JSON arrays so that no choice of separator can make two
 * different keys collide.
 */

/** The name of every source (SPEC: the constant "vulcan"), part of source and family ids. */
export const SOURCE_NAME = 'vulcan';

const NAMESPACE = Buffer.from('6a1f0c3e5b9d4e7a8c2b1d0f3e5a7c9b', 'hex');

// Ingestion computes ~20 ids per report: hashing namespace + name from one reused buffer avoids
// an allocation and a Hash object per id (about five times faster than createHash). Each call
// writes all it hashes (namespace and name) before reading: nothing passes from one call to the next.
const scratch = Buffer.alloc(64 * 1024);

function sha1(name: string): Buffer {
  if (name.length * 3 <= scratch.length - NAMESPACE.length) {
    NAMESPACE.copy(scratch, 0);
    const length = scratch.write(name, NAMESPACE.length, 'utf8');
    return hash('sha1', scratch.subarray(0, NAMESPACE.length + length), 'buffer');
  }
  return hash('sha1', Buffer.concat([NAMESPACE, Buffer.from(name, 'utf8')]), 'buffer');
}

export function uuidv5(name: string): string {
  const digest = sha1(name);
  digest[6] = (digest[6]! & 0x0f) | 0x50;
  digest[8] = (digest[8]! & 0x3f) | 0x80;
  const hex = digest.toString('hex', 0, 16);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

const key = (...parts: string[]) => uuidv5(JSON.stringify(parts));

/**
 * The ids of one kind (`issue`, `finding`) remembered by their key parts (nested maps, so no key
 * text is built): every scan of a target repeats its issues and findings. Bounded: cleared when it
 * grows past `max` entries. Its owner holds it (ingestion's Interned, src/ingest/interned.ts).
 */
export function memoizedIds(kind: 'issue' | 'finding', max = 100_000): (...parts: string[]) => string {
  let root = new Map<string, unknown>();
  let size = 0;
  return (...parts) => {
    let level = root;
    for (let i = 0; i < parts.length - 1; i++) {
      let next = level.get(parts[i]!) as Map<string, unknown> | undefined;
      if (!next) level.set(parts[i]!, (next = new Map()));
      level = next;
    }
    const last = parts[parts.length - 1]!;
    let id = level.get(last) as string | undefined;
    if (id === undefined) {
      if (size >= max) {
        root = new Map();
        size = 0;
        return key(kind, ...parts);
      }
      id = key(kind, ...parts);
      level.set(last, id);
      size += 1;
    }
    return id;
  };
}

export const targetId = (identifier: string) => key('target', identifier);
export const issueId = (summary: string, description: string) => key('issue', summary, description);
export const familyId = (name: string, component: string, options: string) => key('family', name, component, options);
export const sourceId = (name: string, component: string, instance: string, options: string) =>
  key('source', name, component, instance, options);
export const findingId = (targetIdValue: string, issueIdValue: string, affectedResource: string) =>
  key('finding', targetIdValue, issueIdValue, affectedResource);
// Both parts are UUIDs (nothing to escape): the same text JSON.stringify would give, built cheaply.
export const eventId = (findingIdValue: string, sourceIdValue: string) => uuidv5(`["event","${findingIdValue}","${sourceIdValue}"]`);
