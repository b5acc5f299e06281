import { randomUUID } from 'node:crypto';
import { formatInstant, nowSeconds } from '../domain/time.js';
import type { Store } from '../storage/gateway.js';
import type { EventType } from '../queue/contract.js';
import { withoutPassword } from './url-policy.js';

/**
 * Webhook subscriptions in the store (sql/0015_webhooks.sql): versioned rows, a delete being a
 * tombstone. `Subscription` holds the secret (for signing); `WebhookView` is what the API shows.
 */

export interface Subscription {
  id: string;
  url: string;
  /** '' when deliveries are not signed. */
  secret: string;
  /** Empty: every team. */
  teams: string[];
  /** Empty: every event type. */
  events: string[];
  createdAt: number;
}

/** SPEC §9.1: the subscription without its secret. */
export interface WebhookView {
  id: string;
  url: string;
  teams: string[];
  events: string[];
  created_at: string;
}

export const viewOf = (s: Subscription): WebhookView => ({
  id: s.id,
  url: withoutPassword(s.url),
  teams: s.teams,
  events: s.events,
  created_at: formatInstant(s.createdAt),
});

interface Row {
  id: string;
  url: string;
  secret: string;
  teams: string[];
  events: string[];
  created_at: number;
}

const LIVE = `SELECT id, url, secret, teams, events, toUInt32(toUnixTimestamp(created_at)) AS created_at
     FROM webhooks FINAL
     WHERE deleted = 0`;

const fromRow = (r: Row): Subscription => ({
  id: r.id,
  url: r.url,
  secret: r.secret,
  teams: r.teams,
  events: r.events,
  createdAt: r.created_at,
});

export async function createSubscription(
  store: Store,
  input: { url: string; secret: string; teams: string[]; events: EventType[] },
  now = nowSeconds(),
): Promise<Subscription> {
  const s: Subscription = { id: randomUUID(), ...input, createdAt: now };
  await store.insert('webhooks', [
    { id: s.id, url: s.url, secret: s.secret, teams: s.teams, events: s.events, created_at: now, version: 1, deleted: 0 },
  ]);
  return s;
}

const countLive = async (store: Store) =>
  Number((await store.query<{ n: string }>('SELECT count() AS n FROM webhooks FINAL WHERE deleted = 0'))[0]?.n ?? 0);

/**
 * Makes subscriptions while fewer than `max` are live (SPEC §9.1 bounds), else answers undefined.
 * One process makes them one at a time, so its concurrent POSTs fill the cap exactly. API
 * processes share no lock, so the count is checked again after the insert and a subscription that
 * finds more than `max` deletes itself: the last of concurrent inserts always sees every other
 * one, so the cap holds at rest; two processes inserting at the same moment may both step back
 * (a refusal the client may retry, never a subscription too many).
 */
export function boundedCreator(store: Store, max: number) {
  let tail: Promise<unknown> = Promise.resolve();
  const create = async (input: Parameters<typeof createSubscription>[1]): Promise<Subscription | undefined> => {
    if ((await countLive(store)) >= max) return undefined;
    const s = await createSubscription(store, input);
    if ((await countLive(store)) <= max) return s;
    await deleteSubscription(store, s.id);
    return undefined;
  };
  return (input: Parameters<typeof createSubscription>[1]): Promise<Subscription | undefined> => {
    const made = tail.then(() => create(input));
    tail = made.catch(() => undefined);
    return made;
  };
}

/** Every live subscription, by creation time (whole seconds), then id. */
export async function listSubscriptions(store: Store): Promise<Subscription[]> {
  const rows = await store.query<Row>(`${LIVE} ORDER BY created_at, id`);
  return rows.map(fromRow);
}

export async function findSubscription(store: Store, id: string): Promise<Subscription | undefined> {
  const [row] = await store.query<Row>(`${LIVE} AND id = {id:UUID}`, { id });
  return row ? fromRow(row) : undefined;
}

/** Deletes a live subscription; false when there is none with that id. */
export async function deleteSubscription(store: Store, id: string): Promise<boolean> {
  const found = await findSubscription(store, id);
  if (!found) return false;
  await store.insert('webhooks', [
    { id, url: found.url, secret: '', teams: [], events: [], created_at: found.createdAt, version: 2, deleted: 1 },
  ]);
  return true;
}

/** Whether a subscription wants an event of this type on a target with these teams (SPEC §9.1). */
export function wants(s: Subscription, type: EventType, targetTeams: readonly string[]): boolean {
  if (s.events.length > 0 && !s.events.includes(type)) return false;
  return s.teams.length === 0 || s.teams.some((t) => targetTeams.includes(t));
}
